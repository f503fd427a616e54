#!/usr/bin/env bash
# Labelled profiles against expected output: dcpilabel (by label, -by comm,
# JSON), dcpiprof -by comm over libc and the kernel, -label selections in
# dcpiprof, dcpitopcounts and dcpilist, and bad selections.  The database
# is written here (mkdb); its numbers, one event (cycles):
#   libc.so.6  comm=xz,uid=1000 300   comm=sshd,uid=0 100   other 25
#   kernel     comm=xz,uid=1000 do_syscall_64 200
#              comm=sshd,uid=0  clear_page_erms 150
#   /usr/bin/xz  unlabelled (an earlier daemon without -label) 225
#   total 1000: xz 500 (50%), sshd 250, other 25, unlabelled 225
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
write_kallsyms "$T/proc1" 0
LDB=$T/ldb
cat >"$T/lspec" <<EOF
db $LDB
epoch 20240301T000000Z golden
kallsyms $T/proc1
stats samples 1000 lost 0 throttled 0 unknown 0 kernel 350 images 6 cpus 2 start 1709251200 updated 1709254800 labels comm,uid label_values 2 label_other 25
stats-event cycles 100000 1000 3600000000000 3600000000000
profile file
path /usr/lib/libc.so.6
label comm=xz,uid=1000
size 2000000
event cycles 100000 1000000
row 0x2a000 300
end
profile file
path /usr/lib/libc.so.6
label comm=sshd,uid=0
size 2000000
event cycles 100000 1000000
row 0x2b000 100
end
profile file
path /usr/lib/libc.so.6
label other
size 2000000
event cycles 100000 1000000
row 0x2c000 25
end
profile kernel
path [kernel.kallsyms]
label comm=xz,uid=1000
text 0xffffffff81000000 0x1000000
event cycles 100000 1000000
row 0xffffffff81001010 200
end
profile kernel
path [kernel.kallsyms]
label comm=sshd,uid=0
text 0xffffffff81000000 0x1000000
event cycles 100000 1000000
row 0xffffffff81001208 150
end
profile file
path /usr/bin/xz
size 80000
event cycles 100000 1000000
row 0x4000 225
end

epoch 20240302T000000Z golden
stats samples 10 lost 0 throttled 0 unknown 0 kernel 0 images 1 cpus 2 start 1709337600 updated 1709341200
stats-event cycles 100000 10 3600000000000 3600000000000
profile file
path /usr/bin/xz
size 80000
event cycles 100000 1000000
row 0x4000 10
end
EOF
"$DCPI_BUILD/tests/mkdb" "$T/lspec" >"$T/names" 2>"$T/mkdb.err" ||
	{ fail "mkdb writes the labelled database" "$(cat "$T/mkdb.err")"; done_testing; }
# five labelled profile files and one without, each label its own file
n=$(ls "$LDB"/20240301T000000Z/golden/*_L*.prof 2>/dev/null | wc -l)
[ "$n" -eq 5 ] && pass "a file per image and label (5 with _L)" || fail "a file per image and label" "$n: $(ls "$LDB"/*/golden)"

P="$DCPI_BIN/dcpiprof -db $LDB -epoch 20240301T000000Z"
# shellcheck disable=SC2086
{
L="$DCPI_BIN/dcpilabel -db $LDB -epoch 20240301T000000Z"
golden label-list.txt $L
golden label-by-comm.txt $L -by comm
golden label-json.txt $L -json
golden label-prof-by-comm.txt $P -by comm libc.so.6 kernel
golden label-prof-sshd-kernel.txt $P -label comm=sshd -i kernel
golden label-prof-csv.txt $P -csv -by uid -i -label uid=1000
golden label-prof-json.txt $P -json -by comm -label comm=xz
golden label-top-xz.txt "$DCPI_BIN/dcpitopcounts" -db "$LDB" -epoch 20240301T000000Z -label comm=xz kernel
golden label-nosuch.txt $P -label comm=nosuch
golden label-bad.txt $P -label comm
golden label-bad-by.txt $P -by pid
golden label-none.txt "$DCPI_BIN/dcpilabel" -db "$LDB" -epoch 20240302T000000Z
golden label-none-prof.txt $P -epoch 20240302T000000Z -label comm=xz
}
done_testing
