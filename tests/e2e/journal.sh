#!/usr/bin/env bash
# Under systemd (dcpid.service), the log goes to the journal too: with
# JOURNAL_STREAM naming its stderr, each line is written there with its
# syslog priority (<6> info, <3> error) for journald; without it, not.
. "$DCPI_ROOT/tests/tap.sh"
require_root
: >"$T/err"
js=$(stat -c '%d:%i' "$T/err")
JOURNAL_STREAM=$js timeout -s INT 3 "$DCPI_BIN/dcpid" -nodaemon -db "$T/db" 2>>"$T/err"
grep -q '^<6>epoch [0-9T]*Z (' "$T/err" && pass "log lines on the journal's stream, priority <6>" ||
	fail "journal lines" "$(head -5 "$T/err")"
if grep -q '^<6>epoch ' "$T"/db/dcpid-*.log; then
	fail "the file has no priority prefixes"
else
	pass "the log file keeps its own lines"
fi
: >"$T/err2"
timeout -s INT 3 "$DCPI_BIN/dcpid" -nodaemon -db "$T/db2" 2>>"$T/err2"
if grep -q '^<[0-9]>' "$T/err2"; then
	fail "no journal lines without JOURNAL_STREAM" "$(head -3 "$T/err2")"
else
	pass "without JOURNAL_STREAM: none"
fi
done_testing
