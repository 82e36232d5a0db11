package policy

import (
	"math"
	"testing"
)

// Once the foreground has gone from oversubscribed CPUs, the reserve holds
// no more workers than the executor has beyond its CPUs; with a foreground
// seen, or the CPUs or workers unknown, it is Reserve's share unchanged.
func TestReserveOnBusyCPUsHoldsNoMoreThanTheWorkersBeyondTheCPUs(t *testing.T) {
	gone := float64(ForegroundGoneMs)
	cases := []struct {
		name          string
		share         float64
		idleMs        float64
		workers, cpus int
		wantHeld      int
	}{
		{"6 workers on 4 CPUs, foreground gone: 2 of the half's 3", ContendedReserve, gone, 6, 4, 2},
		{"4 workers on 4 CPUs, foreground gone: none", ContendedReserve, gone, 4, 4, 0},
		{"2 workers on 4 CPUs, foreground gone: none", ContendedReserve, 10 * gone, 2, 4, 0},
		{"8 workers on 2 CPUs, foreground gone: the half (6 beyond)", ContendedReserve, gone, 8, 2, 4},
		{"16 workers on 12 CPUs, the quarter: its 4 (4 beyond)", CalmReserve, gone, 16, 12, 4},
		{"16 workers on 14 CPUs, the quarter: 2 of its 4", CalmReserve, gone, 16, 14, 2},
		{"6 workers on 4 CPUs, foreground seen just under the bound", ContendedReserve, gone - 1, 6, 4, 3},
		{"6 workers on 4 CPUs, foreground seen a second ago", ContendedReserve, 1000, 6, 4, 3},
		{"idle not a number", ContendedReserve, math.NaN(), 6, 4, 3},
		{"CPUs unknown", ContendedReserve, gone, 6, 0, 3},
		{"workers unknown", ContendedReserve, gone, 0, 4, 0},
	}
	for _, c := range cases {
		got := ReserveOnBusyCPUs(c.share, c.idleMs, c.workers, c.cpus)
		if held := ReserveWorkers(got, c.workers); held != c.wantHeld {
			t.Errorf("%s: %v holds %d, want %d", c.name, got, held, c.wantHeld)
		}
		if c.wantHeld == ReserveWorkers(c.share, c.workers) && got != c.share {
			t.Errorf("%s: %v, want the share %v unchanged", c.name, got, c.share)
		}
		if got < 0 || got > c.share {
			t.Errorf("%s: %v, want within [0, %v]", c.name, got, c.share)
		}
	}
}

// The agent bounds the reserve by the CPUs only where the run queue says
// they are oversubscribed: a calm node whose foreground has gone holds
// nothing (NoForegroundToProtect), and a blind one keeps the quarter.
func TestServedReserveBoundsOversubscribedCPUsOnceTheForegroundHasGone(t *testing.T) {
	var calm, oversubscribed, blind State
	calm[FeatRunqP99] = float32(runqRange.scale(60))
	oversubscribed[FeatRunqP99] = float32(runqRange.scale(4600))
	gone := Foreground{IdleMs: ForegroundGoneMs}
	seen := Foreground{IdleMs: 100}
	for _, c := range []struct {
		name     string
		s        *State
		fg       Foreground
		wantHeld int
	}{
		{"oversubscribed, slowdown unknown, foreground gone", &oversubscribed, gone, 2},
		{"oversubscribed, slowdown unknown, foreground seen", &oversubscribed, seen, 3},
		{"calm, foreground gone", &calm, gone, 0},
		{"calm, foreground seen", &calm, seen, 1},
		{"blind, foreground gone", &blind, gone, 1},
	} {
		got := ServedReserve(c.s, math.NaN(), c.fg, 6, 4)
		if held := ReserveWorkers(got, 6); held != c.wantHeld {
			t.Errorf("%s: %v holds %d of 6 workers on 4 CPUs, want %d", c.name, got, held, c.wantHeld)
		}
	}
}
