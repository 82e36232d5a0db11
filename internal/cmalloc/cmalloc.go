// Package cmalloc allocates and frees C memory through the C library's
// malloc, so that a test can put on the C heap the block sizes it means to
// check glibc's handling of (the mmap threshold, free chunks) without
// depending on the sizes ONNX Runtime picks on a given CPU. Only tests
// import it.
package cmalloc

/*
#include <stdlib.h>
#include <string.h>

// triage_touch_malloc allocates n bytes and writes every page, so that
// the block is resident and its chunk is in use as a real one would be.
static void *triage_touch_malloc(size_t n) {
	void *p = malloc(n);
	if (p != NULL) memset(p, 1, n);
	return p;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Block is one C allocation.
type Block struct{ p unsafe.Pointer }

// Malloc allocates n bytes with malloc(3) and writes them.
func Malloc(n int) (Block, error) {
	if n <= 0 {
		return Block{}, fmt.Errorf("cmalloc: %d bytes, want at least 1", n)
	}
	p := C.triage_touch_malloc(C.size_t(n))
	if p == nil {
		return Block{}, fmt.Errorf("cmalloc: malloc(%d) failed", n)
	}
	return Block{p: p}, nil
}

// Free returns b with free(3); a second Free of the same Block is a no-op.
func (b *Block) Free() {
	if b.p != nil {
		C.free(b.p)
		b.p = nil
	}
}
