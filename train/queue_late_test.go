package train

import (
	"slices"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// At 50 ms a foreground task whose deadline (10 ms) has passed waits for
// a lull, as late background work does, while a late one that may still
// finish in time (deadline 100 ms, expected 80) starts on any worker the
// foreground may take. Work that can meet its deadline goes first as ever
// (the background task, wherever the reserve lets it), and in a lull the
// expired work after it, highest level first.
func TestExpiredWorkWaitsForALull(t *testing.T) {
	limit := policy.Hold{Share: policy.ContendedReserve, ShortMs: 20}
	for name, c := range map[string]struct {
		busy  int
		hold  policy.Hold
		want  []int
		after []int // then on an idle node
	}{
		"a limit, 2 of 4 busy (the held half)":     {2, limit, []int{1}, []int{3, 0, 2}},
		"a limit, 1 of 4 busy":                     {1, limit, []int{3, 1}, []int{0, 2}},
		"no limit, 3 of 4 busy (the calm quarter)": {3, calmHold, []int{1}, []int{3, 0, 2}},
		"no limit, 2 of 4 busy":                    {2, calmHold, []int{3, 1, 0, 2}, nil},
	} {
		tasks := [][3]float64{
			{4, 10, 2},   // foreground, expired
			{4, 100, 80}, // foreground, late but not expired
			{2, 30, 1},   // foreground at a lower level, expired
			{0, 900, 50}, // background, feasible
		}
		plain, _ := queueOf(false, tasks...)
		for order, q := range map[string]*Queue{"the rules' order": plain, "adaptive": adaptiveQueueOf(4, 1, tasks...)} {
			if got := drainAt(q, 50, c.busy, 4, c.hold); !slices.Equal(got, c.want) {
				t.Errorf("%s, %s: served %v, want %v", name, order, got, c.want)
			}
			if got := drainAt(q, 50, 0, 4, c.hold); !slices.Equal(got, c.after) {
				t.Errorf("%s, %s: then on an idle node served %v, want %v", name, order, got, c.after)
			}
			if q.Len() != 0 {
				t.Errorf("%s, %s: %d tasks left", name, order, q.Len())
			}
		}
	}
}

// A task counts as an expired start when it started after its deadline
// (arrival plus SLA); one started in time, or never started, does not.
func TestExpiredStartsCountsStartsPastTheDeadline(t *testing.T) {
	out := []Outcome{
		{Task: Task{ArrivalMs: 100, SLAMs: 20}, Started: true, StartMs: 115},  // in time
		{Task: Task{ArrivalMs: 100, SLAMs: 20}, Started: true, StartMs: 121},  // expired
		{Task: Task{ArrivalMs: 100, SLAMs: 20}, Started: false, StartMs: 500}, // never started
		{Task: Task{ArrivalMs: 0, SLAMs: 5}, Started: true, StartMs: 5},       // at the deadline
	}
	if got := ExpiredStarts(out); got != 1 {
		t.Fatalf("ExpiredStarts = %d, want 1", got)
	}
}
