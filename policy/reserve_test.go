package policy

import (
	"math"
	"testing"
)

func TestReserveRisesOnlyWhenTheKernelSaysTheCPUsAreContended(t *testing.T) {
	calm, contended := Neutral, Neutral
	if got := Reserve(&calm); got != CalmReserve {
		t.Fatalf("neutral (a kernel that says nothing) = %v, want %v", got, CalmReserve)
	}
	in := Inputs{RunqP99Us: ContendedRunqP99Us * 0.9, SLAMs: 20, CostMs: 2}
	calm = Vector(&in)
	in.RunqP99Us = ContendedRunqP99Us
	contended = Vector(&in)
	if got := Reserve(&calm); got != CalmReserve {
		t.Errorf("run-queue p99 just under the line = %v, want %v", got, CalmReserve)
	}
	if got := Reserve(&contended); got != ContendedReserve {
		t.Errorf("run-queue p99 at the line = %v, want %v", got, ContendedReserve)
	}
	// Only the run-queue feature moves it: a full CPU and a slow disk with
	// a short run queue is a calm node for the reserve.
	busy := calm
	busy[FeatCPUUtil], busy[FeatBlkioP99], busy[FeatQueue] = 1, 1, 1
	if got := Reserve(&busy); got != CalmReserve {
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
