// hot.c: the C profiling target. main -> middle_function -> hot_function
// burns CPU for argv[1] seconds (default 3). Built by the tests with
// -O1 -fno-omit-frame-pointer -fno-inline so the kernel's frame-pointer
// unwinder sees the whole chain. hot_function ends with a call so that it
// is not a frameless leaf (GCC drops the frame of leaves even with
// -fno-omit-frame-pointer, which hides the leaf's caller from any
// frame-pointer profiler).
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

void store(unsigned long x)
{
	sink = x;
}

void hot_function(unsigned long n)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	store(x);
}

void middle_function(void)
{
	hot_function(2000000);
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 3;
	time_t end = time(NULL) + seconds;
	printf("ready\n");
	fflush(stdout);
	while (time(NULL) < end)
		middle_function();
	return 0;
}
