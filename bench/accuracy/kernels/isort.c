#include "common.h"
#define N 6000
__attribute__((noinline)) void kernel(int *a, int n)
{
	for (int i = 1; i < n; i++) {
		int v = a[i], j = i - 1;
		while (j >= 0 && a[j] > v) {
			a[j + 1] = a[j];
			j--;
		}
		a[j + 1] = v;
	}
}
int main(void)
{
	static int a[N];
	for (int r = 0; r < 20; r++) {
		for (int i = 0; i < N; i++)
			a[i] = (int)(rng() % 100000);
		kernel(a, N);
		sink += (uint64_t)a[N / 2];
	}
	return 0;
}
