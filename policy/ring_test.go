package policy

import (
	"slices"
	"testing"
)

// A ring keeps the newest size values and hands back each one it
// overwrites, oldest first.
func TestRingKeepsTheNewestAndReturnsWhatItOverwrites(t *testing.T) {
	var r ring[int]
	if r.len() != 0 || len(r.all()) != 0 {
		t.Fatal("a zero ring is not empty")
	}
	var evicted []int
	for x := range 7 {
		if old, ok := r.add(x, 3); ok {
			evicted = append(evicted, old)
		}
	}
	if r.len() != 3 {
		t.Fatalf("ring of 3 holds %d", r.len())
	}
	got := slices.Clone(r.all())
	slices.Sort(got)
	if !slices.Equal(got, []int{4, 5, 6}) {
		t.Errorf("ring holds %v, want the newest 4 5 6", got)
	}
	if !slices.Equal(evicted, []int{0, 1, 2, 3}) {
		t.Errorf("overwrote %v, want 0 1 2 3 in order", evicted)
	}
}
