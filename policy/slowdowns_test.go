package policy

import (
	"math"
	"testing"
)

// Each class's pace is its own tasks' ratio against the node's slowdown
// as each finished, believed from MinSlowdownSamples on, while the node's
// counts every class's: a class that runs as the mix reads 1 whatever the
// node's contention, and classes that run slower and faster than the mix
// read over and under it.
func TestSlowdownsKeepEachClassApart(t *testing.T) {
	var s Slowdowns
	// The node at 2, class 0 with it; its first tasks, taken while the
	// node's slowdown was not yet known, have left the window.
	for range SlowdownWindowSize + MinSlowdownSamples {
		s.Add(0, 20, 10)
	}
	if v := s.ClassPace(0); v != 1 {
		t.Fatalf("class 0 running as the node: pace %v, want 1", v)
	}
	for range MinSlowdownSamples - 1 {
		s.Add(2, 80, 10)
	}
	if v := s.ClassPace(2); !math.IsNaN(v) {
		t.Fatalf("class 2 after %d tasks: %v, want NaN (too few)", MinSlowdownSamples-1, v)
	}
	s.Add(2, 80, 10)
	node := s.Value()
	want := ((SlowdownWindowSize-MinSlowdownSamples)*20 + MinSlowdownSamples*80) / float64(SlowdownWindowSize*10)
	if math.Abs(node-want) > 1e-12 {
		t.Fatalf("node: %v, want %v", node, want)
	}
	// Class 2 ran 8 times its cost while the node read between 2 and
	// node: its pace is between 8/node and 4.
	if v := s.ClassPace(2); !(v > 8/node && v < 4) {
		t.Fatalf("class 2: pace %v, want between %v and 4", v, 8/node)
	}
	for range 2 * MinSlowdownSamples {
		s.Add(3, 10, 10) // runs as described on a node slowed by the rest
	}
	if v := s.ClassPace(3); !(v < 1) {
		t.Fatalf("class 3, as described beside slower work: pace %v, want under 1", v)
	}
	if v := s.ClassPace(1); !math.IsNaN(v) {
		t.Fatalf("class 1, never finished: %v, want NaN", v)
	}
}

// A class index out of range counts towards the node's slowdown only and
// allocates nothing per class.
func TestSlowdownsIgnoreClassesOutOfRange(t *testing.T) {
	var s Slowdowns
	for _, c := range []int{-1, MaxSlowdownClasses, math.MaxInt} {
		for range MinSlowdownSamples {
			s.Add(c, 20, 10)
		}
		if v := s.ClassPace(c); !math.IsNaN(v) {
			t.Fatalf("class %d: %v, want NaN", c, v)
		}
	}
	if len(s.classes) != 0 {
		t.Fatalf("%d class windows allocated, want 0", len(s.classes))
	}
	if v := s.Value(); v != 2 {
		t.Fatalf("node: %v, want 2", v)
	}
}

// A task is counted at the node's slowdown times its class's pace,
// never under 1: the node's alone where the pace is unknown, the pace
// alone where the node's is.
func TestTaskStretchIsTheNodesTimesTheClasssPace(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct{ node, pace, want float64 }{
		{1.5, 3, 4.5},
		{4, 0.5, 2},
		{4, 0.1, 1},
		{2, nan, 2},
		{nan, 2.5, 2.5},
		{nan, nan, 1},
		{0.5, 0.7, 1},
		{math.Inf(1), 2, 2},
		{2, math.Inf(1), 2},
	} {
		if got := TaskStretch(c.node, c.pace); got != c.want {
			t.Errorf("TaskStretch(%v, %v) = %v, want %v", c.node, c.pace, got, c.want)
		}
	}
}
