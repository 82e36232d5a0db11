package train

import (
	"math"
	"slices"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// adaptiveQueueOf is queueOf for the agent's answers under AdaptiveOrder on
// a node of workers workers at the given slowdown, tasks given as (level,
// deadline, expected).
func adaptiveQueueOf(workers int, slowdown float64, tasks ...[3]float64) *Queue {
	var sd policy.Slowdowns
	ranAt(&sd, 0, policy.MinSlowdownSamples, slowdown)
	return adaptiveQueueWith(workers, &sd, nil, tasks...)
}

// adaptiveQueueWith is adaptiveQueueOf at the slowdowns sd, task i of
// class classes[i] (nil: every task of class 0).
func adaptiveQueueWith(workers int, sd *policy.Slowdowns, classes []int, tasks ...[3]float64) *Queue {
	out := make([]Outcome, len(tasks))
	for i, x := range tasks {
		out[i] = Outcome{Task: Task{ID: i, SLAMs: x[1], ExpectedMs: x[2]}, Level: int(x[0])}
		if classes != nil {
			out[i].Class = classes[i]
		}
		out[i].Key = AdaptiveOrder.Key(&out[i].Task)
	}
	q := NewAnswerQueue(&out, AdaptiveOrder, workers, sd)
	for i := range out {
		q.Push(i)
	}
	return q
}

// ranAt records n finished tasks of class c that ran slowdown times their
// 10 ms described cost (none for NaN: the slowdown stays unknown).
func ranAt(sd *policy.Slowdowns, c, n int, slowdown float64) {
	if math.IsNaN(slowdown) {
		return
	}
	for range n {
		sd.Add(c, 10*slowdown, 10)
	}
}

// risingDeadlinesFallingCosts is n tasks at one level whose deadlines rise
// as their costs fall: earliest deadline first and shortest first
// disagree on every pair.
func risingDeadlinesFallingCosts(n int) [][3]float64 {
	var ts [][3]float64
	for i := range n {
		ts = append(ts, [3]float64{2, float64(1000 + 100*i), float64(10 * (n - i))})
	}
	return ts
}

// Where every deadline can be met the plan sets nothing aside: earliest
// deadline first, though shortest first would reverse every pair, and
// though the level is crowded (six tasks on one worker) where the plan
// counts its queue crowdedPlanStretch times slower.
func TestAdaptiveOrderIsDeadlineFirstWhereEveryDeadlineCanBeMet(t *testing.T) {
	n := crowdPerWorker + 2
	for _, workers := range []int{1, 2} {
		got := drain(adaptiveQueueOf(workers, 1, risingDeadlinesFallingCosts(n)...), 0, workers)
		if !slices.IsSorted(got) || len(got) != n {
			t.Fatalf("%d workers served %v, want deadline order 0..%d", workers, got, n-1)
		}
	}
}

func TestAdaptiveOrderCountsLateWorkAtTheSlowdown(t *testing.T) {
	tasks := [][3]float64{
		{3, 100, 60}, // makes it at its described cost, not at twice it
		{3, 300, 50}, // makes it either way
		{1, 900, 10}, // a lower level, in time
	}
	// Described costs: deadline order at level 3, then level 1.
	if got := drain(adaptiveQueueOf(4, 1, tasks...), 0, 4); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("at slowdown 1 served %v, want [0 1 2]", got)
	}
	// Twice as slow: task 0 would end at 120 > 100, so it yields to every
	// task that still can, at any level.
	if got := drain(adaptiveQueueOf(4, 2, tasks...), 0, 4); !slices.Equal(got, []int{1, 2, 0}) {
		t.Fatalf("at slowdown 2 served %v, want [1 2 0]", got)
	}
	// A node faster than described, or one whose slowdown is unknown
	// (NaN), keeps the described costs.
	for _, s := range []float64{0.5, math.NaN()} {
		if got := drain(adaptiveQueueOf(4, s, tasks...), 0, 4); !slices.Equal(got, []int{0, 1, 2}) {
			t.Fatalf("at slowdown %v served %v, want [0 1 2]", s, got)
		}
	}
}

// A class that runs three times its described cost is counted at its pace
// against the node's mix, mostly work that runs as described, which says
// far less: its task that would end past its deadline at three times its
// cost yields, as it would on a node that slow.
func TestAdaptiveOrderCountsAClassAtItsOwnSlowdown(t *testing.T) {
	var sd policy.Slowdowns
	ranAt(&sd, 0, 100, 1) // class 0 as described
	ranAt(&sd, 1, policy.MinSlowdownSamples, 3)
	if node := sd.Value(); node > 1.5 {
		t.Fatalf("the node's slowdown %.2f, want the mix's, under 1.5", node)
	}
	q := func(sd *policy.Slowdowns) *Queue {
		return adaptiveQueueWith(4, sd, []int{1, 0},
			[3]float64{2, 100, 40}, // class 1: about 130 ms at the node's slowdown times its pace, past 100
			[3]float64{2, 200, 10}, // class 0: in time either way
		)
	}
	if got := drain(q(&sd), 0, 4); !slices.Equal(got, []int{1, 0}) {
		t.Fatalf("served %v, want [1 0]: the slow class's task late at its own slowdown", got)
	}
	// The node's slowdown alone (the class's pace not yet believed) keeps
	// the deadline order.
	var short policy.Slowdowns
	ranAt(&short, 0, 100, 1)
	ranAt(&short, 1, policy.MinSlowdownSamples-1, 3)
	if got := drain(q(&short), 0, 4); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("served %v, want [0 1] while the class's pace is unknown", got)
	}
}

// A CPU class that runs 1.3 times its cost beside a disk-bound class at 7
// times, which drives the node's ratio past 4, is counted at its own pace:
// its task that ends in time at 1.3 times its cost is served by its
// deadline, not set aside as late, while the disk-bound class's task is
// still late. (Counted at the node's slowdown, or at the larger of the
// node's and the class's own, the CPU task was late on arrival.)
func TestAdaptiveOrderCountsAClassFasterThanTheNodesMix(t *testing.T) {
	var sd policy.Slowdowns
	for range 2 * policy.SlowdownWindowSize {
		sd.Add(0, 70, 10) // disk-bound
		sd.Add(1, 13, 10) // CPU
	}
	if node := sd.Value(); node < 4 {
		t.Fatalf("the node's slowdown %.2f, want the mix's, over 4", node)
	}
	q := adaptiveQueueWith(4, &sd, []int{1, 1, 0},
		[3]float64{2, 100, 40}, // CPU: 52 ms at its pace, 166 at the node's
		[3]float64{2, 300, 10}, // CPU: in time either way
		[3]float64{2, 100, 20}, // disk-bound: 140 ms at its pace, late
	)
	if got := drain(q, 0, 4); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("served %v, want [0 1 2]: the CPU task in time at its class's pace, the disk-bound one late", got)
	}
}

// Tasks pushed between pops, at two levels, are served once each and the
// queue ends empty.
func TestAdaptiveOrderServesEachTaskOnce(t *testing.T) {
	out := make([]Outcome, 0, 64)
	q := NewAnswerQueue(&out, AdaptiveOrder, 1, nil)
	served := map[int]int{}
	for round := range 8 {
		for k := range 6 {
			i := len(out)
			out = append(out, Outcome{Task: Task{ID: i, SLAMs: float64(1000 + 10*k), ExpectedMs: float64(6 - k)}, Level: k % 2})
			out[i].Key = AdaptiveOrder.Key(&out[i].Task)
			q.Push(i)
		}
		for range 4 + round%3 {
			if i := q.Pop(0, 0, 4, calmHold); i >= 0 {
				served[i]++
			}
		}
	}
	for i := q.Pop(0, 0, 4, calmHold); i >= 0; i = q.Pop(0, 0, 4, calmHold) {
		served[i]++
	}
	if len(served) != len(out) || q.Len() != 0 {
		t.Fatalf("served %d distinct of %d, %d left", len(served), len(out), q.Len())
	}
	for i, n := range served {
		if n != 1 {
			t.Fatalf("task %d served %d times", i, n)
		}
	}
}
