// selfdump.c: a test target for the unwinder without the kernel. Built with
// gcc -O2 (no frame pointers). main -> top_level -> mid_level -> leaf_level
// -> qsort (libc) -> compare -> dump_here, and dump_here writes its own
// registers and the top of its stack to argv[1], then /proc/self/maps to
// argv[2]: the same data the sampler copies in the kernel. With a third
// argument it then prints "dumped" and waits for stdin to close, so a test
// can read the live process's maps and files.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *regs_path, *maps_path;

static uint64_t stack_end(uint64_t sp)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t lo, hi, end = sp;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi)
			end = hi;
	if (f)
		fclose(f);
	return end;
}

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "r"), *out = fopen(to, "w");
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	fclose(out);
}

__attribute__((noinline)) void dump_here(void)
{
	uint64_t sp, bp, pc;
	__asm__ volatile("mov %%rsp, %0; mov %%rbp, %1; lea 0(%%rip), %2" : "=r"(sp), "=r"(bp), "=r"(pc));
	uint64_t n = stack_end(sp) - sp;
	if (n > 32768)
		n = 32768;
	// Copy before any other call reuses the stack below: the copy is
	// of memory above sp, which calls do not touch.
	static unsigned char copy[32768];
	memcpy(copy, (void *)sp, n);
	FILE *f = fopen(regs_path, "w");
	uint64_t hdr[4] = {pc, sp, bp, n};
	fwrite(hdr, sizeof hdr, 1, f);
	fwrite(copy, 1, n, f);
	fclose(f);
	copy_file("/proc/self/maps", maps_path);
}

static int dumped;

__attribute__((noinline)) int compare(const void *a, const void *b)
{
	if (!dumped) {
		dumped = 1;
		dump_here();
	}
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) int leaf_level(int n)
{
	int v[64];
	for (int i = 0; i < 64; i++)
		v[i] = (i * 7919 + n) % 101;
	qsort(v, 64, sizeof v[0], compare);
	return v[n % 64];
}

__attribute__((noinline)) int mid_level(int n) { return leaf_level(n + 1) + 1; }
__attribute__((noinline)) int top_level(int n) { return mid_level(n * 2) * 3; }

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	regs_path = argv[1];
	maps_path = argv[2];
	int r = top_level(argc) == 12345;
	if (argc > 3) {
		printf("dumped\n");
		fflush(stdout);
		while (getchar() != EOF)
			;
	}
	return r;
}
