// hot.c: the C target of the unwinding tests, built with gcc -O2 (no frame
// pointers, like Debian's packages) and -g. The hot path is
// main -> level_one -> level_two -> level_three -> hot_leaf, all noinline,
// and hot_leaf is a frameless leaf (it calls nothing) whose loop body is
// mix_step, a function inlined into it. A frame-pointer walk loses the
// whole chain here; unwind tables recover it, DWARF names mix_step.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long mix_step(unsigned long x, unsigned long i)
{
	x ^= x >> 13;
	x *= 0x9e3779b97f4a7c15UL;
	return x + i;
}

__attribute__((noinline)) unsigned long hot_leaf(unsigned long n)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < n; i++)
		x = mix_step(x, i);
	return x;
}

__attribute__((noinline)) unsigned long level_three(unsigned long n) { return hot_leaf(n) + 3; }
__attribute__((noinline)) unsigned long level_two(unsigned long n) { return level_three(n) * 5; }
__attribute__((noinline)) unsigned long level_one(unsigned long n) { return level_two(n) ^ 7; }

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 3;
	time_t end = time(NULL) + seconds;
	printf("ready\n");
	fflush(stdout);
	while (time(NULL) < end)
		sink = level_one(2000000);
	return 0;
}
