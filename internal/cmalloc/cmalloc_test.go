package cmalloc

import "testing"

// A block is allocated, written and freed, and a bad size is refused.
func TestMallocAndFree(t *testing.T) {
	b, err := Malloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if b.p == nil {
		t.Fatal("Malloc returned no block")
	}
	if got := *(*byte)(b.p); got != 1 {
		t.Errorf("first byte %d, want 1 (written)", got)
	}
	b.Free()
	if b.p != nil {
		t.Error("Free left the pointer set")
	}
	b.Free() // no-op
	if _, err := Malloc(0); err == nil {
		t.Error("Malloc(0) accepted")
	}
}
