package policy

import (
	"math"
	"testing"
)

// The calm quarter is sized to the foreground only where it holds more
// than one worker, never under one worker nor over the quarter, and an
// unknown foreground keeps the quarter.
func TestSizeCalmReserve(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name        string
		fg, slow    float64
		workers     int
		wantHolds   int
		wantShare   float64 // 0: only wantHolds is checked
		wantQuarter bool
	}{
		{"2 workers: the quarter, none held", 0, 1, 2, 0, 0, true},
		{"4 workers: the quarter, one held", 0, 1, 4, 1, 0, true},
		{"7 workers, a large foreground: the quarter", 5, 1, 7, 1, 0, true},
		{"8 workers, no foreground: one held", 0, 1, 8, 1, 0.125, false},
		{"32 workers, two workers of foreground: six held", 2, 1, 32, 6, 6.0 / 32, false},
		{"32 workers, a worker and a half of foreground slowed 1.5 times: seven held", 1.5, 1.5, 32, 7, 7.0 / 32, false},
		{"32 workers, a slowdown under 1 reads 1", 2, 0.5, 32, 6, 6.0 / 32, false},
		{"32 workers, slowdown unknown reads 1", 2, math.NaN(), 32, 6, 6.0 / 32, false},
		{"32 workers, slowdown infinite reads 1", 2, inf, 32, 6, 6.0 / 32, false},
		{"32 workers, a fraction of a worker rounds up", 0.1, 1, 32, 1, 1.0 / 32, false},
		{"32 workers, a foreground past the quarter: the quarter", 4, 1, 32, 8, 0, true},
		{"64 workers, an unknown foreground: the quarter", math.NaN(), 1, 64, 16, 0, true},
		{"64 workers, an infinite foreground: the quarter", inf, 1, 64, 16, 0, true},
		{"64 workers, a negative foreground: the quarter", -1, 1, 64, 16, 0, true},
	}
	for _, c := range cases {
		got := SizeCalmReserve(c.fg, c.slow, c.workers)
		if c.wantQuarter && got != CalmReserve {
			t.Errorf("%s: %v, want the quarter", c.name, got)
		}
		if c.wantShare != 0 && math.Abs(got-c.wantShare) > 1e-12 {
			t.Errorf("%s: %v, want %v", c.name, got, c.wantShare)
		}
		if n := ReserveWorkers(got, c.workers); n != c.wantHolds {
			t.Errorf("%s: holds %d workers, want %d", c.name, n, c.wantHolds)
		}
		if got > CalmReserve || ReserveWorkers(got, c.workers) < min(MinCalmHeldWorkers, ReserveWorkers(CalmReserve, c.workers)) {
			t.Errorf("%s: %v outside [one worker, the quarter]", c.name, got)
		}
	}
}

// The agent serves the sized calm reserve on a calm large node, and keeps
// the quarter where the run queue says the CPUs are oversubscribed (there
// it is a concurrency limit too) and the half where the node is contended.
func TestServedReserveSizesTheCalmQuarterOnLargeNodes(t *testing.T) {
	var calm, oversubscribed State
	calm[FeatRunqP99] = float32(runqRange.scale(60))
	oversubscribed[FeatRunqP99] = float32(runqRange.scale(4600))
	fg := Foreground{Workers: 2}
	if got := ServedReserve(&calm, 1, fg, 32, 32); ReserveWorkers(got, 32) != 6 {
		t.Errorf("calm, 32 workers, two of foreground: %v holds %d, want 6", got, ReserveWorkers(got, 32))
	}
	if got := ServedReserve(&calm, 1, fg, 4, 4); got != CalmReserve {
		t.Errorf("calm, 4 workers: %v, want the quarter", got)
	}
	// Work at its cost keeps the node calm by Reserve, but the run queue
	// says the CPUs are oversubscribed: the quarter, unsized.
	if got := ServedReserve(&oversubscribed, 1, fg, 32, 32); got != CalmReserve {
		t.Errorf("oversubscribed CPUs, work at its cost, 32 workers: %v, want the quarter", got)
	}
	if got := ServedReserve(&oversubscribed, 0, fg, 32, 32); got != ContendedReserve {
		t.Errorf("oversubscribed CPUs, slowdown unknown, 32 workers: %v, want the half", got)
	}
	// Contended by its slowdown on CPUs that are not oversubscribed: the
	// half sized to the foreground (SizeReserve), never under the quarter.
	if got := ServedReserve(&calm, 2, fg, 32, 32); got != SizeReserve(ContendedReserve, 2, 2, 32) || got < CalmReserve {
		t.Errorf("contended, 32 workers: %v, want SizeReserve's %v", got, SizeReserve(ContendedReserve, 2, 2, 32))
	}
}
