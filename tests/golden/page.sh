#!/usr/bin/env bash
# A report command on one page (tests/golden/page.c: the option spine and
# report_main leave it its options, rows and three printers) runs on the
# golden database as the commands do: its text against expected output,
# and every number against dcpiprof's and dcpitopcounts' for the same
# images (samples of the time column, the hottest instruction); the
# common options (-label, -csv with -json, no such image) as the spine
# gives them to every report.
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
golden_setup || done_testing
P="$DCPI_BUILD/tests/page"

# shellcheck disable=SC2086
{
golden page-prog.txt $P -db $DB prog
golden page-csv.txt $P -db $DB -csv prog kernel
golden page-bad-json-csv.txt $P -db $DB -json -csv prog
golden page-no-image.txt $P -db $DB nosuchimage
golden page-all.txt $P -db $DB
}
out=$("$P" -db "$DB" -help 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q -- '-label K=V' <<<"$out" && grep -q -- '-csv' <<<"$out" &&
	pass "-help: the common options' lines from the spine" || fail "page -help" "rc=$rc $out"

# the same numbers as the commands that report them
(cd "$T" && "$P" -db "$DB" -json prog kernel) >"$T/page.json" 2>"$T/err" &&
	(cd "$T" && "$DCPI_BIN/dcpiprof" -db "$DB" -json) >"$T/prof.json" 2>>"$T/err" &&
	(cd "$T" && "$DCPI_BIN/dcpitopcounts" -db "$DB" -json -n 100000) >"$T/top.json" 2>>"$T/err" ||
	fail "page, dcpiprof, dcpitopcounts -json" "$(cat "$T/err")"
python3 - "$T/page.json" "$T/prof.json" "$T/top.json" <<'PYEOF' &&
import json, os, sys
page, prof, top = (json.load(open(f)) for f in sys.argv[1:4])
col = [e["name"] for e in prof["events"]].index("cycles")  # the time column: cycles sampled
imgs = {os.path.basename(i["image"]): i for i in prof["rows"]}
assert len(page["images"]) == 2, page["images"]
for r in page["images"]:
    want = imgs[r["image"]]["counts"][col]
    assert r["samples"] == want and r["samples"] > 0, (r, want)
    rows = [i for i in top["rows"] if os.path.basename(i["image"]) == r["image"]]
    best = max(i["counts"][col] for i in rows)
    assert r["hottest_samples"] == best, (r, best)
    assert r["instructions"] == sum(1 for i in rows if i["counts"][col] > 0), r
    print("# %s: %d samples, %d instructions, hottest %d" % (r["image"], r["samples"], r["instructions"], best))
PYEOF
	pass "page -json: each image's samples as dcpiprof's, its instructions and hottest as dcpitopcounts'" ||
	fail "page's numbers against dcpiprof and dcpitopcounts" "$(head -c 3000 "$T/page.json")"
done_testing
