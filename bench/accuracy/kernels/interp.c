#include "common.h"
#define N 4096
__attribute__((noinline)) long kernel(const uint8_t *code, int n, long acc)
{
	for (int pc = 0; pc < n; pc++) {
		switch (code[pc]) {
		case 0: acc += 1; break;
		case 1: acc *= 3; break;
		case 2: acc ^= 0x55; break;
		case 3: acc -= 7; break;
		case 4: acc <<= 1; break;
		case 5: acc >>= 2; break;
		case 6: acc = ~acc; break;
		case 7: acc += pc; break;
		default: acc = 0;
		}
	}
	return acc;
}
int main(void)
{
	static uint8_t code[N];
	long acc = 1;
	for (int i = 0; i < N; i++)
		code[i] = (uint8_t)(rng() % 10);
	for (int r = 0; r < 7500; r++)
		acc = kernel(code, N, acc);
	sink += (uint64_t)acc;
	return 0;
}
