#!/usr/bin/env bash
# Option values, one at a time (src/cli.c: cli_parse_count, cli_parse_rate,
# cli_label_key): each value a command refuses is a usage error (exit 2)
# saying which option and value; each it takes gets past the options (to
# the missing database: exit 1).  No database, no daemon.
. "$DCPI_ROOT/tests/tap.sh"
cd "$T" || exit 1

# value CMD OPT VALUE ok|refused [EXTRA ARGS...]
value() {
	local cmd=$1 opt=$2 v=$3 want=$4 out rc
	shift 4
	out=$("$DCPI_BIN/$cmd" "$opt" "$v" -db "$T/nodb" "$@" 2>&1); rc=$?
	if [ "$want" = refused ]; then
		if [ $rc -eq 2 ] && grep -qF -- "$opt" <<<"$out" && grep -qF -- "'$v'" <<<"$out"; then
			pass "$cmd $opt '$v': refused"
		else
			fail "$cmd $opt '$v': refused" "rc=$rc $out"
		fi
	elif [ $rc -eq 1 ] && grep -q "nodb" <<<"$out"; then
		pass "$cmd $opt '$v': taken"
	else
		fail "$cmd $opt '$v': taken" "rc=$rc $out"
	fi
}

# counts: decimal, K/M/G (1024s), nothing else, nothing past 2^64
for v in 0 7 18446744073709551615 1K 1k 2M 3g 17592186044415M 17179869183G; do
	value dcpidiff -keep "$v" ok a b
done
for v in "" K M g -1 -0 1x 1KK 1.5 0x10 18446744073709551616 18014398509481984K \
	17592186044416M 17179869184G; do
	value dcpidiff -keep "$v" refused a b
done
for v in second cpu; do value dcpidiff -rate "$v" ok a b; done
for v in "" seconds CPU sec; do value dcpidiff -rate "$v" refused a b; done
for v in comm uid cgroup; do value dcpiprof -by "$v" ok; done
for v in "" pid com comm,uid; do value dcpiprof -by "$v" refused; done
# durations (dcpid -rotate): N with s, m, h or d, 1 s to 7 days; refused
# before anything starts
for v in "" 0 0s 5x 1.5h -1h 8d h 1hh; do value dcpid -rotate "$v" refused; done
# a side's selection (dcpidiff EPOCH[@HOST][/pid=N,K=V])
for v in "latest/pid=x" "latest/pid=-3" "latest/junk" "latest/pid="; do
	out=$("$DCPI_BIN/dcpidiff" -db "$T/nodb" "$v" latest 2>&1); rc=$?
	[ $rc -eq 2 ] && grep -qF -- "$v" <<<"$out" && pass "dcpidiff side '$v': refused" ||
		fail "dcpidiff side '$v': refused" "rc=$rc $out"
done
done_testing
