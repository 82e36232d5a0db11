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
	out := make([]Outcome, len(tasks))
	for i, x := range tasks {
		out[i] = Outcome{Task: Task{ID: i, SLAMs: x[1], ExpectedMs: x[2]}, Level: int(x[0])}
		out[i].Key = AdaptiveOrder.Key(&out[i].Task)
	}
	q := NewAnswerQueue(&out, AdaptiveOrder, workers, func() float64 { return slowdown })
	for i := range out {
		q.Push(i)
	}
	return q
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

func TestAdaptiveOrderIsDeadlineFirstUntilTheLevelIsCrowded(t *testing.T) {
	// One worker: crowded above crowdPerWorker waiting tasks.
	n := crowdPerWorker + 2
	got := drain(adaptiveQueueOf(1, 1, risingDeadlinesFallingCosts(n)...), 0, 1)
	// The two over the bound leave shortest first (n-1, then n-2); the
	// rest, no longer crowding the level, by deadline.
	want := []int{n - 1, n - 2}
	for i := range n - 2 {
		want = append(want, i)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("one worker served %v, want %v", got, want)
	}
	// Two workers: never crowded, so deadline order throughout.
	got = drain(adaptiveQueueOf(2, 1, risingDeadlinesFallingCosts(n)...), 0, 2)
	if !slices.IsSorted(got) || len(got) != n {
		t.Fatalf("two workers served %v, want deadline order 0..%d", got, n-1)
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

// Tasks pushed while others leave through either heap are served once
// each: the marked entries are skipped, never served twice, and the queue
// ends empty.
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
			if i := q.Pop(0, 0, 4, policy.CalmReserve); i >= 0 {
				served[i]++
			}
		}
	}
	for i := q.Pop(0, 0, 4, policy.CalmReserve); i >= 0; i = q.Pop(0, 0, 4, policy.CalmReserve) {
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

// A crowded level is served shortest first weighted by the root of the
// SLA: a 30 ms task of a 2 s SLA waits behind a 60 ms one of a 200 ms SLA
// (30 × √2000 ≈ 1,342 > 60 × √200 ≈ 849), while among tasks of one SLA the
// shortest goes first.
func TestAdaptiveOrderWeighsCostByTheRootOfTheSLAWhenCrowded(t *testing.T) {
	var tasks [][3]float64
	for range crowdPerWorker {
		tasks = append(tasks, [3]float64{0, 5000, 100}) // filler: crowds the level
	}
	tasks = append(tasks, [3]float64{0, 2000, 30}, [3]float64{0, 200, 60}, [3]float64{0, 200, 50})
	got := drain(adaptiveQueueOf(1, 1, tasks...), 0, 1)
	n := crowdPerWorker
	if want := []int{n + 2, n + 1, n}; !slices.Equal(got[:3], want) {
		t.Fatalf("crowded level served %v first, want %v (the 200 ms SLA's shorter, its longer, then the 2 s SLA's)", got[:3], want)
	}
}

// Crowded, comparable work (within a factor of two of cost × √SLA) is
// served by deadline, so a shorter task cannot overtake an older one of
// its kind; work of a smaller scale still goes first, whatever its
// deadline.
func TestAdaptiveOrderServesComparableWorkByDeadlineWhenCrowded(t *testing.T) {
	var tasks [][3]float64
	for range crowdPerWorker {
		tasks = append(tasks, [3]float64{0, 5000, 100}) // filler: crowds the level (cost × √SLA 7,071)
	}
	n := crowdPerWorker
	tasks = append(tasks,
		[3]float64{0, 200, 12}, // n: 170, the earlier deadline
		[3]float64{0, 220, 10}, // n+1: 148, shorter, the same class as n
		[3]float64{0, 240, 4},  // n+2: 62, a smaller scale, the latest deadline
	)
	got := drain(adaptiveQueueOf(1, 1, tasks...), 0, 1)
	if want := []int{n + 2, n, n + 1}; !slices.Equal(got[:3], want) {
		t.Fatalf("crowded level served %v first, want %v (the smaller scale, then the two comparable tasks by deadline)", got[:3], want)
	}
	if costClass(&Outcome{Task: Task{SLAMs: 200, ExpectedMs: 0}}) != math.Inf(-1) {
		t.Fatal("a task described as costing nothing is not in the lowest class")
	}
}
