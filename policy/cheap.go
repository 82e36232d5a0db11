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

// triage_mmap_threshold sets glibc's mmap threshold (mallopt(3)); it
// returns 1 on success, 0 where mallopt refused, -1 without glibc.
static int triage_mmap_threshold(int bytes) {
#if defined(__GLIBC__)
	return mallopt(M_MMAP_THRESHOLD, bytes);
#else
	return -1;
#endif
}
*/
import "C"

import (
	"errors"
	"fmt"
)

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

// MaxCHeapMmapThreshold is the largest mmap threshold glibc takes on a
// 64-bit system (HEAP_MAX_SIZE / 2).
const MaxCHeapMmapThreshold = 32 << 20

// ErrNoMallopt means the C library is not glibc: the threshold is left to it.
var ErrNoMallopt = errors.New("policy: the C library has no mallopt(M_MMAP_THRESHOLD)")

// SetCHeapMmapThreshold makes every C allocation of at least bytes an mmap
// of its own, returned to the kernel when freed, and fixes the threshold
// (glibc otherwise raises it to the largest block freed, up to 32 MiB).
// It is process-wide and takes effect for the allocations after it.
func SetCHeapMmapThreshold(bytes int) error {
	if bytes <= 0 || bytes > MaxCHeapMmapThreshold {
		return fmt.Errorf("policy: mmap threshold %d bytes, want 1 to %d", bytes, MaxCHeapMmapThreshold)
	}
	switch C.triage_mmap_threshold(C.int(bytes)) {
	case 1:
		return nil
	case -1:
		return ErrNoMallopt
	}
	return fmt.Errorf("policy: mallopt refused an mmap threshold of %d bytes", bytes)
}
