package policy

import "math"

// Slowdowns is how much slower than described an executor's recent work
// ran: over all of it (the node's SlowdownWindow, which gates the reserve)
// and class by class. A class whose descriptor under-describes its work (a
// disk-bound class on a slow disk, a cost model out of date) runs slower
// than the node's mix says, and an order that counts its tasks at the
// node's slowdown plans them as shorter than they are (TaskStretch). The
// zero value is empty and ready; it is not safe for concurrent use.
type Slowdowns struct {
	node    SlowdownWindow
	classes []SlowdownWindow // by class index, grown as classes finish
}

// MaxSlowdownClasses bounds the classes tracked one by one: a task of a
// class index at or past it (or negative) counts towards the node's
// slowdown only, so a wrong index costs no memory.
const MaxSlowdownClasses = 256

// Add records one finished task of class class (its service time and
// expected cost, ms), as SlowdownWindow.Add does.
func (s *Slowdowns) Add(class int, serviceMs, expectedMs float64) {
	s.node.Add(serviceMs, expectedMs)
	if class < 0 || class >= MaxSlowdownClasses {
		return
	}
	if class >= len(s.classes) {
		s.classes = append(s.classes, make([]SlowdownWindow, class+1-len(s.classes))...)
	}
	s.classes[class].Add(serviceMs, expectedMs)
}

// Value is the node's slowdown (SlowdownWindow.Value).
func (s *Slowdowns) Value() float64 { return s.node.Value() }

// ClassValue is class class's own slowdown, NaN until it holds
// MinSlowdownSamples of its tasks.
func (s *Slowdowns) ClassValue(class int) float64 {
	if class < 0 || class >= len(s.classes) {
		return math.NaN()
	}
	return s.classes[class].Value()
}

// TaskStretch is how many times its described cost an executor's order
// counts a task at (train.AdaptiveOrder's plan and its late-work test):
// the larger of the node's slowdown and the task's class's own, each
// stretchOf (1 where unknown, never under 1). The node's covers contention
// that slows every class; the class's own covers a class described as
// shorter than it runs. The larger, not the class's alone: a class the
// contention has not reached yet (its window still holds calmer tasks)
// is counted as slowed as the node's work is. Chosen on the generated
// selection sets against the class's own slowdown alone
// (docs/policy-history.md, "Each class counted at its own slowdown").
func TaskStretch(node, class float64) float64 {
	return math.Max(stretchOf(node), stretchOf(class))
}
