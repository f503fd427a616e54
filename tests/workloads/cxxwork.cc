// A C++ workload whose hot procedure has a mangled name:
// work::Mixer::churn(unsigned long).   cxxwork [MILLIONS] (default 100)
#include <cstdlib>

namespace work {
struct Mixer {
	unsigned long state = 1;
	__attribute__((noinline)) unsigned long churn(unsigned long n);
};

unsigned long Mixer::churn(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		state = (state * 6364136223846793005ul + 1442695040888963407ul) ^ (state >> 29);
	return state;
}
} // namespace work

volatile unsigned long sink;

int main(int argc, char **argv)
{
	work::Mixer m;
	sink = m.churn((argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100) * 1000000ul);
	return 0;
}
