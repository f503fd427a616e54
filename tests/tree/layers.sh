#!/usr/bin/env bash
# The layering rule of libdcpi (docs/architecture.md) holds, and
# scripts/check-layers catches each kind of violation when one is planted
# in a copy of the tree.
. "$(dirname "$0")/../tap.sh"
root=$DCPI_ROOT
chk=$root/scripts/check-layers

out=$("$chk" "$root" 2>&1)
check "the tree follows the layering rule${out:+: $out}" test -z "$out"

# A copy to plant violations in: lib/, include/, src/ are all the script reads.
fresh() {
	rm -rf "$T/tree" && mkdir -p "$T/tree" &&
	cp -r "$root/lib" "$root/include" "$root/src" "$root/docs" "$T/tree/"
}

# plant FILE LINE: insert an include after the file's first #include line
plant() {
	sed -i "0,/^#include/s||$2\n&|" "$T/tree/$1"
}

expect_violation() { # name, file, include line, text the report must name
	local name=$1 file=$2 line=$3 want=$4 got rc
	fresh
	plant "$file" "$line"
	got=$("$chk" "$T/tree" 2>&1); rc=$?
	if [ "$rc" -ne 0 ] && grep -qF -- "$want" <<<"$got"; then
		pass "$name"
	else
		fail "$name" "rc $rc, report: $got"
	fi
}

expect_violation "store including an analysis header is refused" \
	lib/store/profile.c '#include "dcpi/annotate.h"' "lib/store/profile.c: includes dcpi/annotate.h"
expect_violation "base including a store header is refused" \
	lib/base/buf.c '#include "dcpi/profile.h"' "lib/base/buf.c: includes dcpi/profile.h"
expect_violation "symbols including an analysis header is refused" \
	lib/symbols/symtab.c '#include "dcpi/procs.h"' "lib/symbols/symtab.c: includes dcpi/procs.h"
expect_violation "collect including symbols beyond buildid.h is refused" \
	lib/collect/loadmap.c '#include "dcpi/symtab.h"' "lib/collect/loadmap.c: includes dcpi/symtab.h"
expect_violation "analysis including the export layer is refused" \
	lib/analysis/select.c '#include "dcpi/json.h"' "lib/analysis/select.c: includes dcpi/json.h"
expect_violation "a command including a private library header is refused" \
	src/cmd_dcpicat.c '#include "symtab_int.h"' "src/cmd_dcpicat.c: includes private symtab_int.h"
expect_violation "a private header of another folder is refused" \
	lib/analysis/annotate.c '#include "loadmap_priv.h"' "includes private loadmap_priv.h from another folder"

expect_violation "two modules including each other's headers are refused" \
	lib/store/db.c '#include "dcpi/stats.h"' "module db and module stats include each other's headers"

# A file of lib/ the architecture map does not name is refused.
fresh
cp "$T/tree/lib/store/hosts.c" "$T/tree/lib/store/hosts_extra.c"
got=$("$chk" "$T/tree" 2>&1)
grep -qF "lib/store/hosts_extra.c: not in docs/architecture.md's map" <<<"$got" &&
	pass "a lib file missing from docs/architecture.md's map is refused" ||
	fail "a lib file missing from the map is refused" "$got"

# What is allowed stays allowed: collect may read build-ids.
fresh
plant lib/collect/agg.c '#include "dcpi/buildid.h"'
check "collect may include buildid.h" "$chk" "$T/tree"

# A public header that belongs to no module is refused.
fresh
echo '#define X 1' >"$T/tree/include/dcpi/orphan.h"
got=$("$chk" "$T/tree" 2>&1)
if grep -q "orphan.h: public header of no module" <<<"$got"; then
	pass "a public header of no module is refused"
else
	fail "a public header of no module is refused" "$got"
fi
done_testing
