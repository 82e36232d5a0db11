package policy

import (
	"math"
	"testing"
)

// The reserve protects no one only on a calm node whose kernel says its
// CPUs are not oversubscribed, once no foreground task has been decided
// for ForegroundGoneMs; a node whose kernel says nothing keeps it.
func TestNoForegroundToProtectNeedsTheForegroundGoneAndAKernelThatSaysCalm(t *testing.T) {
	short := float32(runqRange.scale(60))  // one runnable thread per CPU on the calibrated node
	long := float32(runqRange.scale(4600)) // 1.5 per CPU
	line := float32(runqRange.scale(ContendedRunqP99Us))
	gone := float64(ForegroundGoneMs)
	cases := []struct {
		name     string
		runq     float32
		slowdown float64
		idleMs   float64
		want     bool
	}{
		{"gone, short run queue, slowdown unknown", short, math.NaN(), gone, true},
		{"gone long ago, short run queue, work at its cost", short, 1, 10 * gone, true},
		{"seen just under the bound", short, 1, gone - 1, false},
		{"seen a second ago", short, 1, 1000, false},
		{"gone, work slowed: contended", short, 1.5, gone, false},
		{"gone, long run queue, slowdown unknown", long, 0, gone, false},
		{"gone, long run queue, work at its cost", long, 1, gone, false},
		{"gone, at the line", line, 1, gone, false},
		{"gone, no kernel (neutral)", 0, 1, gone, false},
		{"gone, no kernel, slowdown unknown", 0, 0, gone, false},
		{"idle not a number", short, 1, math.NaN(), false},
	}
	for _, c := range cases {
		var s State
		s[FeatRunqP99] = c.runq
		if got := NoForegroundToProtect(&s, c.slowdown, c.idleMs); got != c.want {
			t.Errorf("%s: NoForegroundToProtect = %v, want %v", c.name, got, c.want)
		}
		want := SizeCalmReserve(0, c.slowdown, 8) // one worker of 8: no foreground load
		if runqContended(&s) {
			want = CalmReserve // oversubscribed CPUs keep the quarter unsized
		}
		if c.want {
			want = 0
		} else if Reserve(&s, c.slowdown) == ContendedReserve {
			want = ContendedReserve
			if !runqContended(&s) {
				want = CalmReserve // the half sized to a foreground of nothing
			}
		}
		if got := ServedReserve(&s, c.slowdown, Foreground{IdleMs: c.idleMs}, 8, 2); got != want {
			t.Errorf("%s: ServedReserve = %v, want %v", c.name, got, want)
		}
	}
}

// IdleMs counts from the latest foreground task, from the clock's start
// while there has been none; background tasks and tasks with neither a
// cost nor an SLA known count as they are (only the level says
// foreground), and times off the clock read 0.
func TestForegroundLoadIdleMs(t *testing.T) {
	var f ForegroundLoad
	if got := f.IdleMs(7000); got != 7000 {
		t.Errorf("none yet: IdleMs(7000) = %v, want 7000", got)
	}
	f.Add(7500, 0, 10, 100)
	if got := f.IdleMs(8000); got != 8000 {
		t.Errorf("after a background task: %v, want 8000", got)
	}
	f.Add(8000, 2, math.NaN(), 0)
	if got := f.IdleMs(8250); got != 250 {
		t.Errorf("after a foreground task of no known cost or SLA: %v, want 250", got)
	}
	f.Add(9000, 4, 2, 20)
	f.Add(8500, 1, 2, 20) // late: the latest stays
	if got := f.IdleMs(9000); got != 0 {
		t.Errorf("at the latest: %v, want 0", got)
	}
	if got := f.IdleMs(8900); got != 0 {
		t.Errorf("before the latest: %v, want 0", got)
	}
	if got := f.IdleMs(15000); got != 6000 {
		t.Errorf("six seconds on: %v, want 6000", got)
	}
	f.Add(math.Inf(1), 4, 2, 20)
	f.Add(-1, 4, 2, 20)
	if got := f.IdleMs(15000); got != 6000 {
		t.Errorf("after tasks off the clock: %v, want 6000 still", got)
	}
	for _, off := range []float64{-1, math.Inf(1), math.NaN()} {
		if got := f.IdleMs(off); got != 0 {
			t.Errorf("IdleMs(%v) = %v, want 0", off, got)
		}
	}
}
