#!/usr/bin/env bash
# Labels follow the process, not its parent (issue 22, item 1): jobs
# started through setpriv, runuser and su as nobody are labelled with
# nobody's uid; a job moved to another cgroup before its exec with that
# cgroup; a program whose samples are named after it exited (JIT code) has
# its own label, not '?'.  Each job is a copy of one CPU loop under a name
# of its own, so its label is found by its command.
. "$DCPI_ROOT/tests/tap.sh"
require_root
NOBODY=$(id -u nobody)
DB=$T/db
# each job runs 1.5 s of CPU time: longer than the daemon takes to read
# the records of its exec (it reads /proc then; a job gone by then keeps
# its parent's user, dcpid(8) -label)
build_workload cputime "$T/loop" || { fail "build loop"; done_testing; }
for j in lbl_setpriv lbl_runuser lbl_su lbl_cgroup lbl_root lbl_move; do cp "$T/loop" "$T/$j"; done
chmod 755 "$T"/lbl_*

# a cgroup made before the daemon starts: no CGROUP record names it, the
# daemon's scan of the hierarchy does
MV=""
if [ -w /sys/fs/cgroup/unified ] && mkdir "/sys/fs/cgroup/unified/dcpi-labels-move-$$" 2>/dev/null; then
	MV=/dcpi-labels-move-$$
	at_exit "rmdir '/sys/fs/cgroup/unified$MV'"
elif [ -w /sys/fs/cgroup/cgroup.procs ] && mkdir "/sys/fs/cgroup/dcpi-labels-move-$$" 2>/dev/null; then
	MV=/dcpi-labels-move-$$
	at_exit "rmdir '/sys/fs/cgroup$MV'"
fi
start_dcpid "$DB" -label comm,uid,cgroup -bypid comm=lbl_root -merge 3600 ||
	{ fail "dcpid starts"; done_testing; }
setpriv --reuid="$NOBODY" --regid=nogroup --clear-groups -- "$T/lbl_setpriv" 1500
runuser -u nobody -- "$T/lbl_runuser" 1500
su -s /bin/sh nobody -c "$T/lbl_su 1500" 2>"$T/su.err" || echo "# su failed: $(cat "$T/su.err")"
"$T/lbl_root" 1500
CG=""
if [ -w /sys/fs/cgroup/unified ] || [ -w /sys/fs/cgroup/cgroup.procs ]; then
	base=/sys/fs/cgroup/unified
	[ -e "$base/cgroup.procs" ] || base=/sys/fs/cgroup
	CG=/dcpi-labels-$$
	if mkdir "$base$CG" 2>/dev/null; then
		at_exit "rmdir '$base$CG'"
		sh -c "echo \$\$ >'$base$CG/cgroup.procs' && exec '$T/lbl_cgroup' 1500" || CG=""
	else
		CG=""
	fi
	# moved while it runs, without an exec, and back before it exits: only
	# the samples' own cgroup (PERF_SAMPLE_CGROUP) can say where that
	# part of its time went (the daemon read /proc at its exec, drained
	# within 1 s, and /proc shows the old cgroup again at the merge)
	if [ -n "$CG" ] && [ -n "$MV" ]; then
		"$T/lbl_move" 2000 &
		mpid=$!
		tck=$(getconf CLK_TCK)
		cpu() { awk '{print $14 + $15}' "/proc/$mpid/stat" 2>/dev/null || echo 999999; }
		# CPU time (utime + stime, ticks) at least $1 ticks
		until_cpu() { for _ in $(seq 400); do [ "$(cpu)" -ge "$1" ] && break; sleep 0.05; done; }
		sleep 1.5
		until_cpu $((tck * 3 / 10))
		was=$(sed -n 's/^0:://p' "/proc/$mpid/cgroup")
		echo "$mpid" >"$base$MV/cgroup.procs" || MV=""
		until_cpu $(($(cpu) + tck * 4 / 10))
		echo "$mpid" >"$base${was%/}/cgroup.procs"
		wait "$mpid"
	else
		MV=""
	fi
fi
"$DCPI_BIN/dcpictl" -db "$DB" flush >/dev/null || fail "flush"
labels=$("$DCPI_BIN/dcpilabel" -db "$DB" 2>/dev/null)
label_of() { grep -oE "comm=$1,[^ ]*" <<<"$labels" | head -1; }
for j in lbl_setpriv lbl_runuser lbl_su; do
	l=$(label_of "$j")
	if [ -z "$l" ] && [ "$j" = lbl_su ] && [ -s "$T/su.err" ]; then
		skip "su as nobody did not run here: $(head -1 "$T/su.err")"
		continue
	fi
	[[ "$l" == "comm=$j,uid=$NOBODY,"* ]] && pass "$j: uid $NOBODY, not its parent's 0 ($l)" ||
		fail "$j labelled with nobody's uid" "got '$l'; all: $labels"
done
l=$(label_of lbl_root)
[[ "$l" == "comm=lbl_root,uid=0,"* ]] && pass "root's job: uid 0" || fail "root's job: uid 0" "$l"
if [ -n "$CG" ]; then
	l=$(label_of lbl_cgroup)
	[[ "$l" == *",cgroup=$CG" ]] && pass "moved to $CG before its exec: that cgroup ($l)" ||
		fail "a cgroup move before exec" "got '$l', want cgroup=$CG"
else
	skip "no writable cgroup v2 hierarchy here: the cgroup move is not tested"
fi
if [ -n "$MV" ]; then
	if [ -n "$(awk '$1 == "perf_event" && $2 != 0' /proc/cgroups)" ]; then
		skip "perf_event is bound to a cgroup v1 hierarchy: samples do not carry the v2 cgroup"
	else
		l=$(grep -oE "comm=lbl_move,[^ ]*cgroup=$MV\b" <<<"$labels" | head -1)
		[ -n "$l" ] && pass "moved while running, gone before a merge: its later samples under $MV" ||
			fail "samples after a move without exec carry the new cgroup" \
				"no label comm=lbl_move,...,cgroup=$MV; all: $labels"
	fi
fi
# -bypid comm=lbl_root: every image of that process per process, the
# others' not
csv=$("$DCPI_BIN/dcpiprof" -db "$DB" -pid -csv 2>/dev/null)
root_pid=$(awk -F, '$1 ~ /\/lbl_root$/ && $2 != "" { print $2; exit }' <<<"$csv")
other_pid=$(awk -F, '$1 ~ /\/lbl_runuser$/ && $2 != "" { print $2; exit }' <<<"$csv")
[ -n "$root_pid" ] && [ -z "$other_pid" ] &&
	pass "-bypid comm=lbl_root: its profiles per process (pid $root_pid), lbl_runuser's not" ||
	fail "-bypid by label" "lbl_root pid '$root_pid', lbl_runuser pid '$other_pid'; $(grep lbl_ <<<"$csv")"
out=$("$DCPI_BIN/dcpid" -db "$T/nope" -bypid uid=0 2>&1) &&
	fail "-bypid uid=0 without -label uid refused" "$out" ||
	{ grep -q "is not a key of -label" <<<"$out" && pass "-bypid uid=0 without -label uid: refused ($out)" ||
		fail "-bypid K=V without -label refused" "$out"; }
q=$(grep -c 'comm=lbl_[a-z]*' <<<"$labels")
qq=$(grep -E 'comm=lbl_' <<<"$labels" | grep -c '=?')
[ "$qq" -eq 0 ] && pass "none of the jobs' labels has a '?' ($q labels)" ||
	fail "no '?' in the jobs' labels" "$labels"
done_testing
