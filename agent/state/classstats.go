package state

import (
	"math"
	"sync"

	"github.com/triage-agent/triage/policy"
)

// DefaultMaxClasses bounds how many task classes ClassStats tracks: a class
// first seen after that gets no statistics (its features stay neutral), so
// a client inventing class names cannot grow the agent's memory.
const DefaultMaxClasses = 256

// MaxClassBytes bounds a class name: ClassStats keys on the first
// MaxClassBytes bytes, and callers that keep a class per task cut it with
// ClassKey, since a frame may carry a megabyte of class name.
const MaxClassBytes = 128

// ClassKey is class cut to MaxClassBytes, the name ClassStats keys on.
func ClassKey(class string) string {
	if len(class) > MaxClassBytes {
		return class[:MaxClassBytes]
	}
	return class
}

// ClassStats keeps, per task class, a policy.ClassWindow: the service times
// of its last 256 finished tasks and their p50, p99 and mean — the same
// statistic the simulator in train/ keeps, so training and serving read the
// class features alike. Safe for concurrent use.
type ClassStats struct {
	mu      sync.Mutex
	max     int
	classes map[string]*policy.ClassWindow
}

// NewClassStats tracks up to maxClasses classes (0 means DefaultMaxClasses).
func NewClassStats(maxClasses int) *ClassStats {
	if maxClasses <= 0 {
		maxClasses = DefaultMaxClasses
	}
	return &ClassStats{max: maxClasses, classes: map[string]*policy.ClassWindow{}}
}

// Observe records one finished task's service time. Negative, NaN and
// infinite values are ignored (a broken client report is not a sample), as
// is a new class beyond the bound.
func (c *ClassStats) Observe(class string, latencyMs float64) {
	if math.IsNaN(latencyMs) || math.IsInf(latencyMs, 0) || latencyMs < 0 {
		return
	}
	class = ClassKey(class)
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.classes[class]
	if !ok {
		if len(c.classes) >= c.max {
			return
		}
		r = &policy.ClassWindow{}
		c.classes[class] = r
	}
	r.Add(latencyMs)
}

// Stats returns the class's service-time p50, p99 and mean in ms over its
// last 256 tasks, as of the latest recomputation, under one lock; NaN for
// all three when the class is unseen.
func (c *ClassStats) Stats(class string) (p50, p99, mean float64) {
	class = ClassKey(class)
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.classes[class]
	if !ok {
		nan := math.NaN()
		return nan, nan, nan
	}
	return r.Stats()
}

// P50, P99 and MeanMs are the parts of Stats. MeanMs is the cost estimate
// of a task whose descriptor carries none.
func (c *ClassStats) P50(class string) float64 { p50, _, _ := c.Stats(class); return p50 }
func (c *ClassStats) P99(class string) float64 { _, p99, _ := c.Stats(class); return p99 }
func (c *ClassStats) MeanMs(class string) float64 {
	_, _, mean := c.Stats(class)
	return mean
}

// Classes is the number of classes tracked.
func (c *ClassStats) Classes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.classes)
}
