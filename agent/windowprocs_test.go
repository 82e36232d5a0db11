package agent

import (
	"os"
	"runtime"
	"testing"
)

// A window gets the Ps asked for only where the agent itself put the
// process on one P and the runtime had more to give; the operator's
// GOMAXPROCS and any other setting are left as they are.
func TestWindowProcsOnlyRaiseTheAgentsOneP(t *testing.T) {
	t.Setenv("GOMAXPROCS", "") // restored after the test
	os.Unsetenv("GOMAXPROCS")
	for _, tc := range []struct {
		applied, available, asked, want int
	}{
		{1, 8, 2, 2},
		{1, 2, 4, 2}, // no more than the runtime had
		{1, 8, 0, 0}, // 0 or 1: off
		{1, 8, 1, 0},
		{1, 1, 2, 0}, // a one-CPU cgroup: nothing to raise to
		{2, 8, 4, 0}, // --max-procs 2: the operator's choice
		{0, 8, 2, 0},
	} {
		if got := newWindowProcs(tc.applied, tc.available, tc.asked); got.during != tc.want {
			t.Errorf("applied %d, available %d, asked %d: window Ps %d, want %d", tc.applied, tc.available, tc.asked, got.during, tc.want)
		}
	}
	t.Setenv("GOMAXPROCS", "1")
	if got := newWindowProcs(1, 8, 2); got.during != 0 {
		t.Errorf("GOMAXPROCS=1 in the environment: window Ps %d, want none", got.during)
	}
}

// begin and end move the process's GOMAXPROCS and put it back.
func TestWindowProcsBeginAndEnd(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	w := windowProcs{base: prev, during: prev + 1}
	w.begin()
	if got := runtime.GOMAXPROCS(0); got != prev+1 {
		t.Errorf("during a window: GOMAXPROCS %d, want %d", got, prev+1)
	}
	w.end()
	if got := runtime.GOMAXPROCS(0); got != prev {
		t.Errorf("after a window: GOMAXPROCS %d, want %d", got, prev)
	}
	var none windowProcs
	none.begin()
	if got := runtime.GOMAXPROCS(0); got != prev {
		t.Errorf("the zero windowProcs moved GOMAXPROCS to %d", got)
	}
}
