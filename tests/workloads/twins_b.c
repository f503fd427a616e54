/* The second static twin: see twins_a.c. */
__attribute__((noinline)) static unsigned long twin(unsigned long n)
{
	unsigned long x = 3;

	for (unsigned long i = 0; i < n; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	return x;
}

unsigned long twin_b_entry(unsigned long n)
{
	return twin(n);
}
