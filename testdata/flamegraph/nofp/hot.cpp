// hot.cpp: the C++ target of the unwinding tests, built with g++ -O2 -g (no
// frame pointers). The hot path is main -> drive -> shapes::Canvas::paint ->
// shapes::Kernel<3>::run (a class template in a namespace: its symbol is
// mangled) -> shapes::blend (inlined into run). Frames must read as the
// C++ names, not _ZN6shapes6KernelILi3EE3runEm.
#include <cstdio>
#include <cstdlib>
#include <ctime>

volatile unsigned long sink;

namespace shapes {

inline __attribute__((always_inline)) unsigned long blend(unsigned long x, unsigned long i)
{
	x ^= x >> 11;
	x *= 0xbf58476d1ce4e5b9UL;
	return x + i;
}

template <int N> struct Kernel {
	__attribute__((noinline)) static unsigned long run(unsigned long n)
	{
		unsigned long x = sink;
		for (unsigned long i = 0; i < n; i++)
			x = blend(x, i * N);
		return x;
	}
};

struct Canvas {
	__attribute__((noinline)) unsigned long paint(unsigned long n) { return Kernel<3>::run(n) + 1; }
};

} // namespace shapes

__attribute__((noinline)) unsigned long drive(unsigned long n)
{
	shapes::Canvas c;
	return c.paint(n) * 3;
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? std::atoi(argv[1]) : 3;
	std::time_t end = std::time(nullptr) + seconds;
	std::printf("ready\n");
	std::fflush(stdout);
	while (std::time(nullptr) < end)
		sink = drive(2000000);
	return 0;
}
