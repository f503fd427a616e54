/* Fixture of the CFG tests (tests/unit/test_cfg_callgrind.c): compiled
 * -O2 -g and run under callgrind, whose jump records and instruction
 * counts the graph must agree with.  A switch (a jump table), nested
 * loops with an early exit, and a loop calling a function. */
#include <stdlib.h>

volatile long sink;

__attribute__((noinline)) long fx_switch(const unsigned char *code, int n, long acc)
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
		default: acc = 0;
		}
	}
	return acc;
}

__attribute__((noinline)) void fx_isort(int *a, int n)
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

__attribute__((noinline)) static long leaf(long x)
{
	return x * 7 + 1;
}

__attribute__((noinline)) long fx_calls(int n)
{
	long s = 0;

	for (int i = 0; i < n; i++) {
		if (i % 3 == 0)
			continue;
		s += leaf(i);
		if (s > 1000000)
			break;
	}
	return s;
}

int main(int argc, char **argv)
{
	unsigned char code[300];
	int a[200];
	unsigned s = 7;

	(void)argv;
	for (int i = 0; i < 300; i++)
		code[i] = (unsigned char)((i * 7 + argc) % 9);
	for (int i = 0; i < 200; i++)
		a[i] = (int)((s = s * 1103515245u + 12345u) >> 8);
	sink = fx_switch(code, 300, argc);
	fx_isort(a, 200);
	sink += a[100] + fx_calls(5000);
	return 0;
}
