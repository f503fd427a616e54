#include "common.h"
#define N 400000
__attribute__((noinline)) void kernel(int *a, int lo, int hi)
{
	while (lo < hi) {
		int p = a[(lo + hi) / 2], i = lo, j = hi;
		while (i <= j) {
			while (a[i] < p) i++;
			while (a[j] > p) j--;
			if (i <= j) { int t = a[i]; a[i] = a[j]; a[j] = t; i++; j--; }
		}
		if (j - lo < hi - i) { kernel(a, lo, j); lo = i; }
		else { kernel(a, i, hi); hi = j; }
	}
}
int main(void)
{
	static int a[N];
	for (int r = 0; r < 6; r++) {
		for (int i = 0; i < N; i++)
			a[i] = (int)(rng() % 1000000);
		kernel(a, 0, N - 1);
		sink += (uint64_t)a[N / 3];
	}
	return 0;
}
