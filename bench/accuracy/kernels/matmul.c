#include "common.h"
#define N 160
__attribute__((noinline)) void kernel(const double *a, const double *b, double *c, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double s = 0;
			for (int k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
}
int main(void)
{
	static double a[N * N], b[N * N], c[N * N];
	for (int i = 0; i < N * N; i++) {
		a[i] = (double)(rng() % 100) / 7;
		b[i] = (double)(rng() % 100) / 9;
	}
	for (int r = 0; r < 60; r++)
		kernel(a, b, c, N);
	sink += (uint64_t)c[N + 1];
	return 0;
}
