# bench/accuracy/corpus.sh: the programs `make accuracy` measures, for the
# benches that compare other numbers on the same ones (sourced by
# bench/accuracy/run and bench/inclusive; bash).
#
#   corpus_kernels                the kernels' names (bench/accuracy/kernels/NAME.c)
#   corpus_build_kernel ROOT NAME OUT   builds one as make accuracy does
#   corpus_inputs DIR             writes DIR/in.txt (1.5 MB of text from a fixed
#                                 seed) and DIR/q.sql (sqlite3's queries)
#   corpus_real                   lines "NAME COMMAND..." of the real programs
#                                 present here, run in the inputs' DIR (words
#                                 quoted for the shell: eval them)
corpus_kernels() { echo isort qsort crc hash list interp strsearch matmul; }

corpus_build_kernel() {
	cc -O2 -g -fno-inline -o "$3" "$1/bench/accuracy/kernels/$2.c"
}

corpus_inputs() {
	awk 'BEGIN { x = 12345; split("the of and to a in that is was he for it with as his on be at by had", w)
		for (i = 0; i < 260000; i++) { x = (x * 1103515245 + 12345) % 2147483648
			printf "%s%s", w[int(x / 65536) % 20 + 1], (i % 13 == 12) ? "\n" : " " } }' >"$1/in.txt"
	printf '%s\n' "create table t(a integer, b text);" \
		"with recursive n(i) as (select 1 union all select i + 1 from n where i < 60000)" \
		"insert into t select i * 7919 % 60001, printf('%08d', i * 31 % 99991) from n;" \
		"create index tb on t(b);" "select count(*), sum(a) from t where b like '%12%';" \
		"select b, count(*) from t group by substr(b, 1, 3) order by 2 desc limit 3;" >"$1/q.sql"
}

corpus_real() {
	echo "gzip gzip -9 -k -f in.txt"
	echo "bzip2 bzip2 -9 -k -f in.txt"
	echo "xz xz -6 -k -f -T1 in.txt"
	! command -v sqlite3 >/dev/null || echo "sqlite3 sqlite3 :memory: '.read q.sql'"
}
