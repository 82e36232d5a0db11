package train

import (
	"slices"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// queueOf returns a Queue over tasks given as (level, deadline, expected).
func queueOf(keyOrdered bool, tasks ...[3]float64) (*Queue, *[]Outcome) {
	out := make([]Outcome, len(tasks))
	for i, x := range tasks {
		out[i] = Outcome{Task: Task{ID: i, SLAMs: x[1], ExpectedMs: x[2]}, Level: int(x[0]), Key: x[1]}
	}
	q := NewQueue(&out, keyOrdered)
	for i := range out {
		q.Push(i)
	}
	return q, &out
}

func drain(q *Queue, busy, workers int) []int { return drainHeld(q, busy, workers, calmHold) }

func TestQueueContract(t *testing.T) {
	q, _ := queueOf(false,
		[3]float64{0, 100, 1},  // background
		[3]float64{3, 500, 1},  // high level, late deadline
		[3]float64{3, 200, 1},  // high level, earlier deadline: first
		[3]float64{4, 5, 10},   // highest level but cannot make it (0 + 10 > 5): yields
		[3]float64{3, 200, 1},  // ties with 2: arrival order
		[3]float64{1, 60, 100}, // late at level 1, longer than 3
	)
	// Two of eight workers busy: six free, more than the reserve of two, so
	// background work may start.
	if got, want := drain(q, 2, 8), []int{2, 4, 1, 0, 3, 5}; !slices.Equal(got, want) {
		t.Fatalf("served %v, want %v", got, want)
	}
	if q.Len() != 0 || q.Pop(0, 0, 8, calmHold) != -1 {
		t.Fatal("an empty queue served a task")
	}
}

func TestBackgroundHeldBackAtTheReserve(t *testing.T) {
	tasks := [][3]float64{
		{0, 100, 1}, // background, feasible
		{0, 1, 5},   // background, late
		{1, 900, 1}, // lowest foreground level
	}
	plain, _ := queueOf(false, tasks...)
	// The agent's answers under the adaptive order keep the tier too.
	for name, q := range map[string]*Queue{"the rules' order": plain, "adaptive": adaptiveQueueOf(1, 1, tasks...)} {
		// 4 workers, reserve 1: with 3 busy only one is free, so only the
		// foreground task may start, and the background ones wait, late or not.
		if got := drain(q, 3, 4); !slices.Equal(got, []int{2}) {
			t.Fatalf("%s: at the reserve served %v, want [2]", name, got)
		}
		if q.Len() != 2 {
			t.Fatalf("%s: %d left queued, want the 2 background tasks", name, q.Len())
		}
		// Two free: background runs, feasible before late.
		if got := drain(q, 2, 4); !slices.Equal(got, []int{0, 1}) {
			t.Fatalf("%s: below the reserve served %v, want [0 1]", name, got)
		}
	}
}

func TestBackgroundReserveScalesWithWorkers(t *testing.T) {
	for _, c := range []struct{ workers, reserve int }{{1, 0}, {3, 0}, {4, 1}, {8, 2}, {64, 16}} {
		if got := BackgroundReserve(c.workers); got != c.reserve {
			t.Errorf("BackgroundReserve(%d) = %d, want %d", c.workers, got, c.reserve)
		}
		// A node with every worker free always starts background work.
		if LowestLevel(0, c.workers, BackgroundReserve(c.workers)) != 0 {
			t.Errorf("%d idle workers hold background work back", c.workers)
		}
	}
	if LowestLevel(3, 4, 1) != 1 || LowestLevel(2, 4, 1) != 0 {
		t.Error("4 workers: want background held back with one free, not with two")
	}
	// A contended node's reserve (half of 4) holds it back with two free.
	if LowestLevel(2, 4, 2) != 1 || LowestLevel(1, 4, 2) != 0 {
		t.Error("4 workers, 2 held back: want background held back with two free, not with three")
	}
}

func TestKeyOrderedQueueIgnoresTiers(t *testing.T) {
	q, _ := queueOf(true, [3]float64{0, 3, 1}, [3]float64{0, 1, 1}, [3]float64{0, 2, 1}, [3]float64{0, 1, 1})
	// FIFO/EDF/SJF are the textbook disciplines: key order, no reserve, no
	// late-work rule, even with every worker but one busy.
	if got, want := drain(q, 3, 4), []int{1, 3, 2, 0}; !slices.Equal(got, want) {
		t.Fatalf("served %v, want %v", got, want)
	}
}

// calmHold is what an executor told nothing holds back: the calm quarter.
var calmHold = policy.Hold{Share: policy.CalmReserve}
