# bench/accuracy/corpus.sh: the programs `make accuracy` measures, for the
# benches that compare other numbers on the same ones (sourced by
# bench/accuracy/run and bench/inclusive; bash).
#
#   corpus_kernels                the kernels' names (bench/accuracy/kernels/NAME.c)
#   corpus_build_kernel ROOT NAME OUT   builds one as make accuracy does
#   corpus_inputs DIR [K]         writes DIR/in.txt (K x 0.9 MB of text from a
#                                 fixed seed; K 1 unless given), DIR/rep.txt
#                                 (as long, one 44 KB stretch of it over and
#                                 over) and DIR/q.sql (sqlite3's queries over
#                                 K x 60,000 rows)
#   corpus_real                   lines "NAME COMMAND..." of the real programs
#                                 present here, run in the inputs' DIR (words
#                                 quoted for the shell: eval them)
corpus_kernels() { echo isort qsort crc hash list interp strsearch matmul; }

corpus_build_kernel() {
	cc -O2 -g -fno-inline -o "$3" "$1/bench/accuracy/kernels/$2.c"
}

# Words drawn by Park and Miller's generator (x * 16807 mod 2^31 - 1):
# its products stay below 2^46, exact in awk's doubles.  The generator
# used before (x * 1103515245 + 12345 mod 2^31) was not, and fell into a
# cycle of 10,466 words: the text repeated every 44 KB, bzip2 found it
# "too repetitive" and sorted every block with its fallback sort (a
# cache-missing routine, a third of the corpus's scored blocks), and xz
# packed it 150 to 1.  rep.txt keeps such a text, on purpose, among the
# programs held out.
corpus_inputs() {
	awk -v k="${2:-1}" 'BEGIN { x = 12345; split("the of and to a in that is was he for it with as his on be at by had", w)
		for (i = 0; i < 260000 * k; i++) { x = (x * 16807) % 2147483647
			printf "%s%s", w[int(x / 65536) % 20 + 1], (i % 13 == 12) ? "\n" : " " } }' >"$1/in.txt"
	awk -v k="${2:-1}" -v n=805 'NR <= n { l[NR] = $0 } END { for (i = 0; i < 20000 * k; i++)
		print l[i % n + 1] }' "$1/in.txt" >"$1/rep.txt"   # 805 lines: 10,465 words, 44 KB
	printf '%s\n' "create table t(a integer, b text);" \
		"with recursive n(i) as (select 1 union all select i + 1 from n where i < $((60000 * ${2:-1})))" \
		"insert into t select i * 7919 % $((60000 * ${2:-1} + 1)), printf('%08d', i * 31 % 99991) from n;" \
		"create index tb on t(b);" "select count(*), sum(a) from t where b like '%12%';" \
		"select b, count(*) from t group by substr(b, 1, 3) order by 2 desc limit 3;" >"$1/q.sql"
}

corpus_real() {
	echo "gzip gzip -9 -k -f in.txt"
	echo "bzip2 bzip2 -9 -k -f in.txt"
	echo "xz xz -6 -k -f -T1 in.txt"
	! command -v sqlite3 >/dev/null || echo "sqlite3 sqlite3 :memory: '.read q.sql'"
}

# Programs outside the corpus, for checking that what was tuned on
# corpus_real holds elsewhere (make accuracy's last table): bzip2 on a
# text that repeats (its fallback sort, memory-bound), decompressors
# (run after corpus_real made their inputs), a sort, an awk, Python and
# Perl interpreters and zstd, as Debian ships them; those not installed
# left out.  Inputs repeated so that each runs 0.2 s or more here.
corpus_heldout() {
	local i gz="" bz="" txt3="in.txt in.txt in.txt"
	for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do gz+=" in.txt.gz"; done
	bz="in.txt.bz2 in.txt.bz2"
	echo "bzip2rep bzip2 -9 -k -f rep.txt"
	echo "gunzip gzip -d -c$gz"
	echo "bunzip2 bzip2 -d -c $bz"
	echo "sort sort -f --parallel=1 -S 256M -o /dev/null $txt3 in.txt"
	echo "mawk mawk '{ for (i = 1; i <= NF; i++) n[\$i]++ } END { for (w in n) s += n[w]; print s }' $txt3"
	! [ -x /usr/bin/python3 ] ||
		echo "python3 /usr/bin/python3 -c 'import collections; print(sum(collections.Counter(open(\"in.txt\").read().split()).values()))'"
	! [ -x /usr/bin/perl ] ||
		echo "perl /usr/bin/perl -ne '\$n{\$_}++ for split; END { print scalar(keys %n), \"\\n\" }' $txt3"
	! command -v zstd >/dev/null || echo "zstd zstd -19 -T1 -c in.txt"
}
