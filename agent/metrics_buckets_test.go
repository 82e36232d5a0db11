package agent

import (
	"math"
	"testing"
)

// The decide latency histogram must tell a p99 of 100 µs (issue 15's goal)
// from one of 140: every bucket from 5 µs to 0.1 s at most √2 wide, and
// none of the span left to +Inf, where a quantile cannot be read at all.
func TestDecideLatencyBucketsResolveTheGoal(t *testing.T) {
	b := decideLatencyBuckets
	if len(b) == 0 || b[0] > 5e-6 {
		t.Fatalf("first bound %v, want 5 µs or less", b)
	}
	if last := b[len(b)-1]; last < 0.1 {
		t.Errorf("last bound %v s: a decide of 0.1 s would fall in +Inf", last)
	}
	for i := 1; i < len(b); i++ {
		if r := b[i] / b[i-1]; r > math.Sqrt2*(1+1e-9) || r <= 1 {
			t.Errorf("bucket (%g, %g]: ratio %.3f, want at most √2", b[i-1], b[i], r)
		}
	}
	// The bucket holding 100 µs: a reading interpolated in it is within
	// ±20% of the truth wherever the truth lies in it.
	for i := 1; i < len(b); i++ {
		if b[i-1] < 100e-6 && 100e-6 <= b[i] {
			if lo, hi := b[i-1]/100e-6, b[i]/100e-6; lo < 0.7 || hi > 1.42 {
				t.Errorf("100 µs lies in (%g, %g]", b[i-1], b[i])
			}
		}
	}
}
