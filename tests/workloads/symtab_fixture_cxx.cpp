// C++ fixture of test_symtab: names that must come out demangled.
#include <cstdio>

namespace ns {
struct Klass {
	int v;
	__attribute__((noinline)) int method(int x);
};

int Klass::method(int x)
{
	return v * x + 1;
}
} // namespace ns

int main(int argc, char **)
{
	ns::Klass k{argc};
	std::printf("%d\n", k.method(argc));
	return 0;
}
