#include "common.h"
#define N 200000
struct node { struct node *next; long pad[7]; long val; };
__attribute__((noinline)) long kernel(const struct node *p)
{
	long s = 0;
	while (p) {
		if (p->val & 1)
			s += p->val;
		else
			s ^= p->val;
		p = p->next;
	}
	return s;
}
int main(void)
{
	struct node *v = calloc(N, sizeof(*v));
	int *perm = malloc(N * sizeof(int));
	for (int i = 0; i < N; i++) perm[i] = i;
	for (int i = N - 1; i > 0; i--) { int j = (int)(rng() % (uint64_t)(i + 1)); int t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
	for (int i = 0; i < N; i++) { v[perm[i]].next = i + 1 < N ? &v[perm[i + 1]] : NULL; v[perm[i]].val = (long)(rng() % 1000); }
	for (int r = 0; r < 12; r++)
		sink += (uint64_t)kernel(&v[perm[0]]);
	return 0;
}
