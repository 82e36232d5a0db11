package train

import (
	"slices"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// drainAt pops q at nowMs under hold until nothing may start, in pop order.
func drainAt(q *Queue, nowMs float64, busy, workers int, hold policy.Hold) []int {
	var got []int
	for {
		i := q.Pop(nowMs, busy, workers, hold)
		if i < 0 {
			return got
		}
		got = append(got, i)
	}
}

// drainHeld is drainAt at time 0.
func drainHeld(q *Queue, busy, workers int, hold policy.Hold) []int {
	return drainAt(q, 0, busy, workers, hold)
}

// While the half of 4 workers is held and two are free, a background
// task starts only if it is the next in its level's order and within the
// short limit; late background work waits (it missed its SLA already) for
// an idle node, and the foreground goes first as ever. With one free (the calm quarter's)
// no background task starts at all, short or not.
func TestShortBackgroundWorkPassesTheHeldHalf(t *testing.T) {
	hold := policy.Hold{Share: policy.ContendedReserve, ShortMs: 20}
	tasks := [][3]float64{
		{0, 200, 15},   // background, short, the earlier deadline
		{0, 2000, 250}, // background, long
		{0, 1, 5},      // background, short but late
		{1, 900, 1},    // foreground
	}
	plain, _ := queueOf(false, tasks...)
	for name, q := range map[string]*Queue{"the rules' order": plain, "adaptive": adaptiveQueueOf(4, 1, tasks...)} {
		if got := drainHeld(q, 3, 4, hold); !slices.Equal(got, []int{3}) {
			t.Fatalf("%s: one free, served %v, want the foreground [3]", name, got)
		}
		if got := drainHeld(q, 2, 4, hold); !slices.Equal(got, []int{0}) {
			t.Fatalf("%s: two free under the half, served %v, want the short one [0]", name, got)
		}
		// The long task is next now and holds its level: the late short
		// one does not pass it.
		if got := drainHeld(q, 2, 4, hold); len(got) != 0 {
			t.Fatalf("%s: two free, the long task next, served %v, want none", name, got)
		}
		// Three free: the long one starts; the late one waits for an idle
		// node while a short limit is given (policy.Hold.LateStarts).
		if got := drainHeld(q, 1, 4, hold); !slices.Equal(got, []int{1}) {
			t.Fatalf("%s: three free, served %v, want [1]", name, got)
		}
		if got := drainHeld(q, 0, 4, hold); !slices.Equal(got, []int{2}) {
			t.Fatalf("%s: an idle node, served %v, want the late one [2]", name, got)
		}
	}
}

// Background work whose SLA is within the urgent limit starts whatever
// the reserve holds, even on the last free worker, as the foreground does,
// but after it and in its level's order; a looser task next in order
// keeps it waiting, and late work (it cannot meet its SLA) still waits
// for the reserve.
func TestUrgentBackgroundWorkPassesEveryHeldWorker(t *testing.T) {
	hold := policy.Hold{Share: policy.ContendedReserve, UrgentSLAMs: 80}
	tasks := [][3]float64{
		{0, 60, 30},   // background, urgent (SLA within 80 ms)
		{0, 300, 5},   // background, not urgent, the later deadline
		{0, 70, 100},  // background, urgent SLA but late
		{1, 900, 100}, // foreground
	}
	plain, _ := queueOf(false, tasks...)
	for name, q := range map[string]*Queue{"the rules' order": plain, "adaptive": adaptiveQueueOf(4, 1, tasks...)} {
		if got := drainHeld(q, 3, 4, hold); !slices.Equal(got, []int{3, 0}) {
			t.Fatalf("%s: one free, served %v, want the foreground, then the urgent one [3 0]", name, got)
		}
		if got := drainHeld(q, 3, 4, hold); len(got) != 0 {
			t.Fatalf("%s: one free, the loose task next, served %v, want none", name, got)
		}
		if got := drainHeld(q, 3, 4, policy.Hold{Share: policy.ContendedReserve}); len(got) != 0 {
			t.Fatalf("%s: without an urgent limit served %v, want none", name, got)
		}
		if got := drainHeld(q, 1, 4, hold); !slices.Equal(got, []int{1, 2}) {
			t.Fatalf("%s: three free, served %v, want [1 2]", name, got)
		}
	}
}

// A short task behind a longer one with an earlier deadline waits: the
// limit lets the level's next task pass, it does not reorder the level.
func TestShortBackgroundWorkKeepsItsLevelsOrder(t *testing.T) {
	hold := policy.Hold{Share: policy.ContendedReserve, ShortMs: 20}
	tasks := [][3]float64{{0, 300, 100}, {0, 400, 5}}
	plain, _ := queueOf(false, tasks...)
	for name, q := range map[string]*Queue{"the rules' order": plain, "adaptive": adaptiveQueueOf(4, 1, tasks...)} {
		if got := drainHeld(q, 2, 4, hold); len(got) != 0 {
			t.Fatalf("%s: served %v behind a long task, want none", name, got)
		}
		if got := drainHeld(q, 2, 4, policy.Hold{Share: policy.ContendedReserve}); len(got) != 0 {
			t.Fatalf("%s: without a limit served %v, want none", name, got)
		}
		if got := drainHeld(q, 0, 4, hold); !slices.Equal(got, []int{0, 1}) {
			t.Fatalf("%s: every worker free, served %v, want [0 1]", name, got)
		}
	}
}

// A start counts as short work only in the background and only with no
// more than the reserve free: where the gate let nothing else through.
func TestPassedAsShort(t *testing.T) {
	half := policy.Hold{Share: policy.ContendedReserve, ShortMs: 20}
	for _, c := range []struct {
		name                 string
		level, busy, workers int
		hold                 policy.Hold
		want                 bool
	}{
		{"background, two of four free under the half", 0, 2, 4, half, true},
		{"background, three free: over the half", 0, 1, 4, half, false},
		{"foreground, two free", 3, 2, 4, half, false},
		{"background, two free under the quarter", 0, 2, 4, calmHold, false},
	} {
		if got := passedAsShort(c.level, c.busy, c.workers, c.hold); got != c.want {
			t.Errorf("%s: passedAsShort = %v, want %v", c.name, got, c.want)
		}
	}
}

// On a node of two workers with one busy, a long background task waits
// while a short limit is given (the last worker stays for the foreground
// and short work) and takes the worker without one, as before; a short
// background task takes it either way.
func TestLongBackgroundWorkLeavesTheLastOfTwoWorkers(t *testing.T) {
	limit := policy.Hold{Share: policy.CalmReserve, ShortMs: 20}
	for name, c := range map[string]struct {
		task [3]float64
		hold policy.Hold
		want []int
	}{
		"long, a limit":    {[3]float64{0, 3000, 250}, limit, nil},
		"long, no limit":   {[3]float64{0, 3000, 250}, calmHold, []int{0}},
		"short, a limit":   {[3]float64{0, 100, 8}, limit, []int{0}},
		"short, no limit":  {[3]float64{0, 100, 8}, calmHold, []int{0}},
		"foreground, long": {[3]float64{2, 3000, 250}, limit, []int{0}},
	} {
		plain, _ := queueOf(false, c.task)
		for order, q := range map[string]*Queue{"the rules' order": plain, "adaptive": adaptiveQueueOf(2, 1, c.task)} {
			if got := drainHeld(q, 1, 2, c.hold); !slices.Equal(got, c.want) {
				t.Errorf("%s, %s: one of two busy, served %v, want %v", name, order, got, c.want)
			}
		}
		// Both free: the long task starts whatever the limit.
		plain, _ = queueOf(false, c.task)
		if got := drainHeld(plain, 0, 2, c.hold); !slices.Equal(got, []int{0}) {
			t.Errorf("%s: both free, served %v, want [0]", name, got)
		}
	}
}

// Late background work starts only on a nearly idle node while a short
// limit is given (fewer than a quarter of the workers busy: none of four,
// at most one of eight), however many workers the reserve leaves it, and
// as any long background work without one; a feasible background task
// and the foreground still start beside it.
func TestLateBackgroundWorkWaitsForALull(t *testing.T) {
	limit := policy.Hold{Share: policy.CalmReserve, ShortMs: 20}
	for name, c := range map[string]struct {
		busy, workers int
		hold          policy.Hold
		want          []int
	}{
		"a limit, 1 of 4 busy":  {1, 4, limit, []int{2, 1}},
		"a limit, 0 of 4 busy":  {0, 4, limit, []int{2, 1, 0}},
		"a limit, 1 of 8 busy":  {1, 8, limit, []int{2, 1, 0}},
		"a limit, 2 of 8 busy":  {2, 8, limit, []int{2, 1}},
		"no limit, 2 of 4 busy": {2, 4, calmHold, []int{2, 1, 0}},
		"no limit, 3 of 4 busy": {3, 4, calmHold, []int{2}},
	} {
		tasks := [][3]float64{
			{0, 1, 300},  // background, late
			{0, 900, 50}, // background, feasible
			{3, 40, 2},   // foreground
		}
		plain, _ := queueOf(false, tasks...)
		for order, q := range map[string]*Queue{"the rules' order": plain, "adaptive": adaptiveQueueOf(c.workers, 1, tasks...)} {
			if got := drainHeld(q, c.busy, c.workers, c.hold); !slices.Equal(got, c.want) {
				t.Errorf("%s, %s: served %v, want %v", name, order, got, c.want)
			}
		}
	}
}

// On a node of policy.ShortUnheldWorkers workers or more, short background
// work may start on the last free worker while long work still leaves the
// calm quarter; on four workers short work leaves the quarter too.
func TestShortBackgroundWorkTakesTheLastWorkerOfALargeNode(t *testing.T) {
	hold := policy.Hold{Share: policy.CalmReserve, ShortMs: 20}
	tasks := [][3]float64{
		{0, 200, 15},   // background, short
		{0, 2000, 250}, // background, long
	}
	plain, _ := queueOf(false, tasks...)
	for name, q := range map[string]*Queue{"the rules' order": plain, "adaptive": adaptiveQueueOf(8, 1, tasks...)} {
		if got := drainHeld(q, 7, 8, hold); !slices.Equal(got, []int{0}) {
			t.Fatalf("%s: one of 8 free, served %v, want the short one [0]", name, got)
		}
		if got := drainHeld(q, 6, 8, hold); len(got) != 0 {
			t.Fatalf("%s: two of 8 free, the long task next, served %v, want none (the quarter)", name, got)
		}
		if got := drainHeld(q, 5, 8, hold); !slices.Equal(got, []int{1}) {
			t.Fatalf("%s: three of 8 free, served %v, want the long one [1]", name, got)
		}
	}
	small, _ := queueOf(false, tasks[0])
	for name, q := range map[string]*Queue{"the rules' order": small, "adaptive": adaptiveQueueOf(4, 1, tasks[0])} {
		if got := drainHeld(q, 3, 4, hold); len(got) != 0 {
			t.Fatalf("%s: one of 4 free, served %v, want none (the quarter)", name, got)
		}
		if got := drainHeld(q, 2, 4, hold); !slices.Equal(got, []int{0}) {
			t.Fatalf("%s: two of 4 free, served %v, want [0]", name, got)
		}
	}
}
