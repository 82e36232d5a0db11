package policy

import (
	"math"
	"testing"
)

func TestReserveFollowsTheWorksSlowdownAndTheKernelWhereItIsUnknown(t *testing.T) {
	calm, contended := Neutral, Neutral
	if got := Reserve(&calm, math.NaN()); got != CalmReserve {
		t.Fatalf("neutral (a kernel that says nothing), slowdown unknown = %v, want %v", got, CalmReserve)
	}
	in := Inputs{RunqP99Us: ContendedRunqP99Us * 0.9, SLAMs: 20, CostMs: 2}
	calm = Vector(&in)
	in.RunqP99Us = ContendedRunqP99Us
	contended = Vector(&in)
	// The slowdown unknown (NaN, 0, negative), the run queue decides, at
	// its line.
	for _, unknown := range []float64{math.NaN(), 0, -1} {
		if got := Reserve(&calm, unknown); got != CalmReserve {
			t.Errorf("slowdown %v, run-queue p99 just under the line = %v, want %v", unknown, got, CalmReserve)
		}
		if got := Reserve(&contended, unknown); got != ContendedReserve {
			t.Errorf("slowdown %v, run-queue p99 at the line = %v, want %v", unknown, got, ContendedReserve)
		}
	}
	// A known slowdown decides, at its line, whatever the kernel says.
	for _, c := range []struct {
		slowdown float64
		want     float64
	}{{1, CalmReserve}, {MinReserveSlowdown * 0.99, CalmReserve}, {MinReserveSlowdown, ContendedReserve}, {3, ContendedReserve}, {math.Inf(1), ContendedReserve}} {
		for name, s := range map[string]*State{"calm kernel": &calm, "contended kernel": &contended} {
			if got := Reserve(s, c.slowdown); got != c.want {
				t.Errorf("%s, slowdown %v: %v, want %v", name, c.slowdown, got, c.want)
			}
		}
	}
	// Of the kernel, only the run-queue feature moves it: a full CPU and a
	// slow disk with a short run queue is a calm node for the reserve.
	busy := calm
	busy[FeatCPUUtil], busy[FeatBlkioP99], busy[FeatQueue] = 1, 1, 1
	if got := Reserve(&busy, math.NaN()); got != CalmReserve {
		t.Errorf("other features high = %v, want %v", got, CalmReserve)
	}
}

func TestReserveWorkers(t *testing.T) {
	for _, c := range []struct {
		share   float64
		workers int
		want    int
	}{
		{CalmReserve, 1, 0}, {CalmReserve, 3, 0}, {CalmReserve, 4, 1}, {CalmReserve, 8, 2},
		{ContendedReserve, 2, 1}, {ContendedReserve, 3, 1}, {ContendedReserve, 4, 2}, {ContendedReserve, 12, 6},
		{0, 8, 0}, {1, 8, 8}, {-1, 8, 0}, {7, 8, 8}, {math.NaN(), 8, 2}, {math.Inf(1), 8, 8},
	} {
		if got := ReserveWorkers(c.share, c.workers); got != c.want {
			t.Errorf("ReserveWorkers(%v, %d) = %d, want %d", c.share, c.workers, got, c.want)
		}
	}
}

func TestSlowdownWindowIsTheRatioOfSumsOfItsLatestTasks(t *testing.T) {
	var w SlowdownWindow
	if v := w.Value(); !math.IsNaN(v) {
		t.Fatalf("empty window %v, want NaN", v)
	}
	for range MinSlowdownSamples - 1 {
		w.Add(20, 10)
	}
	if v := w.Value(); !math.IsNaN(v) {
		t.Fatalf("%d tasks: %v, want NaN (too few)", MinSlowdownSamples-1, v)
	}
	w.Add(20, 10)
	if v := w.Value(); v != 2 {
		t.Fatalf("every task twice its cost: %v, want 2", v)
	}
	// Tasks without a cost or a service time say nothing.
	w.Add(0, 10)
	w.Add(10, 0)
	w.Add(math.NaN(), 10)
	w.Add(math.Inf(1), 10)
	if v := w.Value(); v != 2 {
		t.Fatalf("after ignored samples: %v, want 2", v)
	}
	// A full window of tasks that ran as described pushes the old ones out.
	for range SlowdownWindowSize {
		w.Add(5, 5)
	}
	if v := w.Value(); math.Abs(v-1) > 1e-12 {
		t.Fatalf("after a window of tasks at their cost: %v, want 1", v)
	}
	// A ratio of sums: one long task slowed weighs by its length.
	w = SlowdownWindow{}
	for range 15 {
		w.Add(1, 1)
	}
	w.Add(300, 100)
	if v, want := w.Value(), 315.0/115.0; math.Abs(v-want) > 1e-12 {
		t.Fatalf("ratio of sums %v, want %v", v, want)
	}
}
