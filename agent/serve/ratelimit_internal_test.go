package serve

import (
	"fmt"
	"testing"
	"time"
)

// The bucket lets a burst of its size through, then the rate; addresses
// have buckets of their own.
func TestConnRateBucket(t *testing.T) {
	r := newConnRate(10)
	now := time.Unix(1000, 0)
	for i := range 10 {
		if !r.allow("10.0.0.1", now) {
			t.Fatalf("attempt %d of a burst of 10 refused", i)
		}
	}
	if r.allow("10.0.0.1", now) {
		t.Fatal("the 11th attempt of the same instant passed")
	}
	if !r.allow("10.0.0.2", now) {
		t.Fatal("another address was refused")
	}
	// 10 a second: one token every 100 ms.
	if r.allow("10.0.0.1", now.Add(50*time.Millisecond)) {
		t.Fatal("passed 50 ms later")
	}
	if !r.allow("10.0.0.1", now.Add(150*time.Millisecond)) {
		t.Fatal("refused 150 ms later")
	}
	// A long quiet refills to the burst, not beyond.
	later := now.Add(time.Hour)
	for i := range 10 {
		if !r.allow("10.0.0.1", later) {
			t.Fatalf("after an hour, attempt %d refused", i)
		}
	}
	if r.allow("10.0.0.1", later) {
		t.Fatal("the bucket grew past its size")
	}
}

// The buckets are bounded: quiet addresses are swept, and past the bound
// an address is let through untracked rather than growing the map.
func TestConnRateBounded(t *testing.T) {
	r := newConnRate(5)
	now := time.Unix(1000, 0)
	for i := range maxRateBuckets {
		r.allow(fmt.Sprintf("a%d", i), now)
	}
	if !r.allow("new", now) {
		t.Fatal("an address past the bound was refused")
	}
	if len(r.buckets) > maxRateBuckets {
		t.Fatalf("%d buckets, bound %d", len(r.buckets), maxRateBuckets)
	}
	// A second later every bucket has refilled: the sweep frees them.
	if !r.allow("newer", now.Add(2*time.Second)) || len(r.buckets) != 1 {
		t.Fatalf("after the sweep %d buckets, want 1", len(r.buckets))
	}
}
