#include "common.h"
#define N (1 << 20)
__attribute__((noinline)) long kernel(const char *t, long n, const char *p, long m)
{
	long hits = 0;
	for (long i = 0; i + m <= n; i++) {
		long j = 0;
		while (j < m && t[i + j] == p[j])
			j++;
		if (j == m)
			hits++;
	}
	return hits;
}
int main(void)
{
	static char t[N];
	for (long i = 0; i < N; i++)
		t[i] = (char)('a' + rng() % 3);
	for (int r = 0; r < 30; r++)
		sink += (uint64_t)kernel(t, N, "abcabca", 7);
	return 0;
}
