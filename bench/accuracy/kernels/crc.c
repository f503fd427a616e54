#include "common.h"
#define N (1 << 20)
__attribute__((noinline)) uint32_t kernel(const uint8_t *p, size_t n)
{
	uint32_t crc = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}
int main(void)
{
	static uint8_t buf[N];
	for (size_t i = 0; i < N; i++)
		buf[i] = (uint8_t)rng();
	for (int r = 0; r < 20; r++)
		sink += kernel(buf, N);
	return 0;
}
