package policy

import (
	"math"
	"testing"
)

// Each class's slowdown is its own tasks' ratio, believed from
// MinSlowdownSamples on, while the node's counts every class's.
func TestSlowdownsKeepEachClassApart(t *testing.T) {
	var s Slowdowns
	for range 3 * MinSlowdownSamples {
		s.Add(0, 10, 10)
	}
	for range MinSlowdownSamples - 1 {
		s.Add(2, 40, 10)
	}
	if v := s.ClassValue(2); !math.IsNaN(v) {
		t.Fatalf("class 2 after %d tasks: %v, want NaN (too few)", MinSlowdownSamples-1, v)
	}
	s.Add(2, 40, 10)
	if v := s.ClassValue(2); v != 4 {
		t.Fatalf("class 2: %v, want 4", v)
	}
	if v := s.ClassValue(0); v != 1 {
		t.Fatalf("class 0: %v, want 1", v)
	}
	if v := s.ClassValue(1); !math.IsNaN(v) {
		t.Fatalf("class 1, never finished: %v, want NaN", v)
	}
	want := (3*MinSlowdownSamples*10 + MinSlowdownSamples*40) / float64(4*MinSlowdownSamples*10)
	if v := s.Value(); math.Abs(v-want) > 1e-12 {
		t.Fatalf("node: %v, want %v", v, want)
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
		if v := s.ClassValue(c); !math.IsNaN(v) {
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

// A task is counted at the larger of the node's and its class's slowdown,
// never under 1, 1 where both are unknown.
func TestTaskStretchTakesTheLarger(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct{ node, class, want float64 }{
		{1.2, 3, 3},
		{3, 1.2, 3},
		{2, nan, 2},
		{nan, 2.5, 2.5},
		{nan, nan, 1},
		{0.5, 0.7, 1},
		{math.Inf(1), 2, 2},
	} {
		if got := TaskStretch(c.node, c.class); got != c.want {
			t.Errorf("TaskStretch(%v, %v) = %v, want %v", c.node, c.class, got, c.want)
		}
	}
}
