package train

import (
	"fmt"
	"testing"
)

// Where the tasks taken by deadline would miss one, the plan sets the
// longest aside: on one worker A (60 ms, due at 100), B (40, due at 110)
// and C (30, due at 120) cannot all make it (A, B, C ends C at 130); without
// A, B and C both do, so B goes first, where earliest deadline first would
// start A and shortest first C.
func TestAdaptiveOrderSetsTheLongestAside(t *testing.T) {
	q := adaptiveQueueOf(1, 1, [3]float64{2, 100, 60}, [3]float64{2, 110, 40}, [3]float64{2, 120, 30})
	if got := q.Pop(0, 0, 1, calmHold); got != 1 {
		t.Fatalf("served %d first, want 1 (B: A set aside, B's deadline before C's)", got)
	}
}

// A crowded level (more than crowdPerWorker tasks per worker) plans its
// queue crowdedPlanStretch times slower: four tasks of 10 ms due at 200
// behind one of 50 ms due at 100 all make it on one worker, and the 50 ms
// task goes first; a fifth (5 ms, due at 300) crowds the level, the plan no
// longer fits them (the first short one would end at 4 × 50 + 10 = 210),
// and the long task is set aside. The first 10 ms task goes, not the
// shortest: the plan keeps deadline order among the work it keeps.
func TestAdaptiveOrderPlansACrowdedLevelSlower(t *testing.T) {
	tasks := [][3]float64{{0, 100, 50}}
	for range crowdPerWorker - 1 {
		tasks = append(tasks, [3]float64{0, 200, 10})
	}
	if got := adaptiveQueueOf(1, 1, tasks...).Pop(0, 0, 1, calmHold); got != 0 {
		t.Fatalf("not crowded: served %d first, want 0 (every deadline can be met)", got)
	}
	tasks = append(tasks, [3]float64{0, 300, 5})
	if got := adaptiveQueueOf(1, 1, tasks...).Pop(0, 0, 1, calmHold); got != 1 {
		t.Fatalf("crowded: served %d first, want 1 (the long task set aside, then deadline order)", got)
	}
}

// A plan keeps its buffers between pops: a second plan over fewer tasks
// reads none of the first's set-aside marks. Its list is in deadline
// order, as the queue keeps it.
func TestLevelPlanReusesItsBuffers(t *testing.T) {
	out := []Outcome{
		{Task: Task{ID: 0, SLAMs: 100, ExpectedMs: 60}},
		{Task: Task{ID: 1, SLAMs: 110, ExpectedMs: 40}},
		{Task: Task{ID: 2, SLAMs: 120, ExpectedMs: 30}},
	}
	var p levelPlan
	if k := p.next(out, []int{0, 1, 2}, 0, &stretches{}, 1, 1); k != 1 {
		t.Fatalf("first plan: place %d, want 1 (task 0 set aside)", k)
	}
	// Task 0 alone now: it makes its deadline and is served.
	if k := p.next(out, []int{0}, 0, &stretches{}, 1, 1); k != 0 {
		t.Fatalf("second plan: place %d, want 0", k)
	}
	// Tasks 1 and 2 (places 0 and 1): both make it, deadline first.
	if k := p.next(out, []int{1, 2}, 0, &stretches{}, 1, 1); k != 0 {
		t.Fatalf("third plan: place %d, want 0 (task 1)", k)
	}
	// At twice the workers nothing is set aside: deadline first.
	if k := p.next(out, []int{0, 1, 2}, 0, &stretches{}, 1, 2); k != 0 {
		t.Fatalf("two workers: place %d, want 0 (task 0)", k)
	}
}

// BenchmarkAdaptiveQueuePop is one push and one pop at a level holding n
// waiting tasks (four workers, crowded above 16): the cost per task
// served of keeping the level in deadline order, scanning it for late work
// and planning its earliest planLimit tasks at each pop.
func BenchmarkAdaptiveQueuePop(b *testing.B) {
	for _, n := range []int{8, 64, 512, 4096} {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			out := make([]Outcome, 0, n+b.N)
			q := NewAnswerQueue(&out, AdaptiveOrder, 4, nil)
			add := func(i int) {
				cost := float64(1 + (i*7919)%200)
				out = append(out, Outcome{Task: Task{ID: i, ArrivalMs: float64(i), SLAMs: 10 * cost, ExpectedMs: cost}})
				q.Push(i)
			}
			for i := range n {
				add(i)
			}
			b.ResetTimer()
			for i := range b.N {
				add(n + i)
				if q.Pop(0, 0, 4, calmHold) < 0 {
					b.Fatal("empty")
				}
			}
		})
	}
}
