package policy

/*
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// triage_heap_stats reads mallinfo2 (every arena's totals) and counts the
// arenas in malloc_info's report; arenas is -1 where neither exists.
static void triage_heap_stats(size_t *in_use, size_t *free_bytes, size_t *mapped, int *arenas) {
	*in_use = 0; *free_bytes = 0; *mapped = 0; *arenas = -1;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
	struct mallinfo2 mi = mallinfo2();
	*in_use = mi.uordblks + mi.hblkhd;
	*free_bytes = mi.fordblks;
	*mapped = mi.hblkhd;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL) return;
	int ok = malloc_info(0, f) == 0;
	fclose(f);
	if (ok && buf != NULL) {
		int n = 0;
		for (char *p = buf; (p = strstr(p, "<heap nr=")) != NULL; p++) n++;
		*arenas = n;
	}
	free(buf);
#endif
}
*/
import "C"

// CHeap is the C heap (ONNX Runtime's memory) as glibc counts it.
type CHeap struct {
	InUse  uint64 // bytes in allocated chunks, mmapped ones included
	Free   uint64 // bytes in free chunks the arenas keep (resident or not)
	Mapped uint64 // bytes of allocations mmapped on their own (large ones)
	Arenas int    // arenas, the main one included; -1 where unknown
}

// ReadCHeap reads the C heap's counters (mallinfo2 and malloc_info(3);
// zeros and Arenas -1 on a C library without them). It locks each arena
// for a moment: a scrape's cost, not a decision's.
func ReadCHeap() CHeap {
	var inUse, free, mapped C.size_t
	var arenas C.int
	C.triage_heap_stats(&inUse, &free, &mapped, &arenas)
	return CHeap{InUse: uint64(inUse), Free: uint64(free), Mapped: uint64(mapped), Arenas: int(arenas)}
}
