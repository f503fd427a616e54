#include "common.h"
#define SLOTS (1 << 16)
#define KEYS 45000
static uint64_t keys[SLOTS];
__attribute__((noinline)) int kernel(uint64_t k, int insert)
{
	uint64_t h = (k * 0x9e3779b97f4a7c15ull) >> 48;
	for (;;) {
		if (keys[h] == k)
			return 1;
		if (keys[h] == 0) {
			if (insert)
				keys[h] = k;
			return 0;
		}
		h = (h + 1) & (SLOTS - 1);
	}
}
int main(void)
{
	static uint64_t ks[KEYS];
	int found = 0;
	for (int i = 0; i < KEYS; i++) {
		ks[i] = rng() | 1;
		kernel(ks[i], 1);
	}
	for (int r = 0; r < 300; r++)
		for (int i = 0; i < KEYS; i++)
			found += kernel(i % 3 ? ks[i] : ks[i] + 2, 0);
	sink += (uint64_t)found;
	return 0;
}
