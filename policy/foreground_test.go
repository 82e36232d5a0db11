package policy

import (
	"math"
	"testing"
)

// The load counts the expected cost of the foreground's tasks over the
// last second, per millisecond: background tasks and unknown costs add
// nothing, and a task leaves the load once the window has passed it.
func TestForegroundLoadCountsTheForegroundOverItsWindow(t *testing.T) {
	var f ForegroundLoad
	if got := f.Workers(0); got != 0 {
		t.Fatalf("empty: %v, want 0", got)
	}
	f.Add(10, 0, 400, 0)          // background
	f.Add(10, 1, math.NaN(), 0)   // unknown cost
	f.Add(10, 4, -5, 0)           // not a cost
	f.Add(math.NaN(), 4, 100, 0)  // not a time
	f.Add(math.Inf(1), 4, 100, 0) // not a time
	f.Add(10, 4, 200, 0)
	f.Add(500, 1, 300, 0)
	if got := f.Workers(600); got != 0.5 {
		t.Fatalf("200 + 300 ms of foreground work in the last second: %v workers, want 0.5", got)
	}
	if got := f.Workers(1_020); got != 0.3 {
		t.Fatalf("a second after the first task: %v workers, want 0.3 (the second alone)", got)
	}
	if got := f.Workers(1_600); got != 0 {
		t.Fatalf("a second after both: %v workers, want 0", got)
	}
	// A time already out of the window of the latest one added would
	// land in the slot a newer bucket holds (620 ms and 1,600 ms share
	// one) and wipe it: it is not counted, and the newer bucket stays.
	f.Add(1_600, 2, 100, 0)
	f.Add(620, 2, 1_000, 0)
	if got := f.Workers(1_600); math.Abs(got-0.1) > 1e-12 {
		t.Fatalf("after a late, stale add: %v workers, want 0.1", got)
	}
}

// A contended reserve is sized to three times the foreground's load,
// stretched by the slowdown, in whole workers, between the calm and the
// contended share; a calm one, and anything it cannot size, is left as it
// is.
func TestSizeReserve(t *testing.T) {
	for _, c := range []struct {
		name                      string
		share, fg, slowdown, want float64
		workers                   int
	}{
		{"calm stays calm", CalmReserve, 2, 2, CalmReserve, 8},
		{"no foreground: the calm share", ContendedReserve, 0, 2, CalmReserve, 8},
		{"a sliver: one worker, under the calm share", ContendedReserve, 0.01, 2, CalmReserve, 8},
		{"0.5 workers at slowdown 2: 3 of 8", ContendedReserve, 0.5, 2, 3.0 / 8, 8},
		{"slowdown unknown reads 1: ceil(1.5) = 2 of 8", ContendedReserve, 0.5, math.NaN(), CalmReserve, 8},
		{"slowdown under 1 reads 1", ContendedReserve, 0.7, 0.5, 3.0 / 8, 8},
		{"a heavy foreground: the contended share", ContendedReserve, 4, 2, ContendedReserve, 8},
		{"on two workers any foreground is one", ContendedReserve, 0.01, 1.3, ContendedReserve, 2},
		{"no workers known", ContendedReserve, 0.01, 2, ContendedReserve, 0},
		{"load unknown", ContendedReserve, math.NaN(), 2, ContendedReserve, 8},
		{"load infinite", ContendedReserve, math.Inf(1), 2, ContendedReserve, 8},
	} {
		if got := SizeReserve(c.share, c.fg, c.slowdown, c.workers); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: SizeReserve(%v, %v, %v, %d) = %v, want %v", c.name, c.share, c.fg, c.slowdown, c.workers, got, c.want)
		}
	}
}

// The served reserve is sized to the foreground where the run queue does
// not say the CPUs are oversubscribed, and stays the contended half where
// it does: there holding workers back pays by itself.
func TestServedReserveKeepsTheHalfWhereTheCPUsAreOversubscribed(t *testing.T) {
	in := Inputs{RunqP99Us: ContendedRunqP99Us * 0.9, SLAMs: 20, CostMs: 2}
	short := Vector(&in)
	in.RunqP99Us = ContendedRunqP99Us
	long := Vector(&in)
	for _, c := range []struct {
		name     string
		s        *State
		slowdown float64
		want     float64
	}{
		{"slowed work, short run queue: sized", &short, 2, CalmReserve},
		{"slowed work, long run queue: the half", &long, 2, ContendedReserve},
		{"slowdown unknown, long run queue: the half", &long, math.NaN(), ContendedReserve},
		{"work as described: calm whatever the run queue", &long, 1, CalmReserve},
	} {
		if got := ServedReserve(c.s, c.slowdown, Foreground{Workers: 0.01}, 8, 8); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// The tightest SLA is the foreground's over the window: background tasks
// and unknown SLAs say nothing of it, a task with an SLA and no known cost
// does, and a tight task leaves it once the window has passed it.
func TestForegroundLoadKeepsTheTightestSLA(t *testing.T) {
	var f ForegroundLoad
	if got := f.TightestSLA(0); got != 0 {
		t.Fatalf("empty: %v, want 0", got)
	}
	f.Add(10, 0, 5, 5)            // background
	f.Add(10, 2, 5, math.NaN())   // unknown SLA
	f.Add(10, 2, 5, -1)           // not an SLA
	f.Add(math.NaN(), 3, 5, 1)    // not a time
	f.Add(20, 3, math.NaN(), 200) // an SLA without a cost
	f.Add(400, 4, 2, 20)
	f.Add(900, 4, 2, 50)
	if got := f.TightestSLA(950); got != 20 {
		t.Fatalf("20, 50 and 200 ms in the window: %v, want 20", got)
	}
	// The load: the two tasks without an SLA (5 ms each) and the two
	// tight ones (2 ms each); the task without a cost adds none.
	if got := f.Workers(950); math.Abs(got-0.014) > 1e-12 {
		t.Fatalf("load %v workers, want 0.014", got)
	}
	if got := f.TightestSLA(1_450); got != 50 {
		t.Fatalf("a second after the 20 ms task: %v, want 50", got)
	}
	if got := f.TightestSLA(2_000); got != 0 {
		t.Fatalf("a second after all: %v, want 0", got)
	}
	if got := f.TightestSLA(math.Inf(1)); got != 0 {
		t.Fatalf("not a time: %v, want 0", got)
	}
}
