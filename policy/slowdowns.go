package policy

import "math"

// Slowdowns is how much slower than described an executor's recent work
// ran: over all of it (the node's SlowdownWindow, which gates the reserve)
// and, class by class, each class's pace against the node's. A class whose
// descriptor under-describes its work (a disk-bound class on a slow disk,
// a cost model out of date) runs slower than the node's mix says, and one
// that the node's contention does not reach (CPU work beside a disk-bound
// class that dominates the node's ratio) runs faster; an order that counts
// every task at the node's slowdown plans the one as shorter and the other
// as longer than they are (TaskStretch). The zero value is empty and
// ready; it is not safe for concurrent use.
type Slowdowns struct {
	node SlowdownWindow
	// classes holds, by class index (grown as classes finish), each
	// class's pace: its tasks' service times over their expected costs
	// stretched by the node's slowdown when each finished.
	classes []SlowdownWindow
}

// MaxSlowdownClasses bounds the classes tracked one by one: a task of a
// class index at or past it (or negative) counts towards the node's
// slowdown only, so a wrong index costs no memory.
const MaxSlowdownClasses = 256

// Add records one finished task of class class (its service time and
// expected cost, ms): towards the node's slowdown as SlowdownWindow.Add
// does, and towards its class's pace against the node's slowdown with
// this task counted.
func (s *Slowdowns) Add(class int, serviceMs, expectedMs float64) {
	s.node.Add(serviceMs, expectedMs)
	if class < 0 || class >= MaxSlowdownClasses {
		return
	}
	if class >= len(s.classes) {
		s.classes = append(s.classes, make([]SlowdownWindow, class+1-len(s.classes))...)
	}
	s.classes[class].Add(serviceMs, expectedMs*stretchOf(s.node.Value()))
}

// Value is the node's slowdown (SlowdownWindow.Value).
func (s *Slowdowns) Value() float64 { return s.node.Value() }

// ClassPace is class class's pace against the node's: the ratio of sums
// of its last SlowdownWindowSize tasks' service times over their expected
// costs at the node's stretch when each finished (1: the class runs as the
// node's mix; 3: three times slower; 0.4: the node's contention reaches it
// less), NaN until it holds MinSlowdownSamples of its tasks.
func (s *Slowdowns) ClassPace(class int) float64 {
	if class < 0 || class >= len(s.classes) {
		return math.NaN()
	}
	return s.classes[class].Value()
}

// TaskStretch is how many times its described cost an executor's order
// counts a task at (train.AdaptiveOrder's plan and its late-work test):
// the node's slowdown (stretchOf: 1 where unknown or under 1) times the
// task's class's pace against it (ClassPace; 1 where unknown), never
// under 1.
//
// Why the pace, not the class's own slowdown: the node's covers the
// contention of now and updates with every class's tasks; a class's own
// window updates only with that class's, so a rare class's window still
// holds the calm of minutes ago. Its pace against the node says how it
// runs beside the rest (a disk-bound class at three times the mix, a CPU
// class at a third of a mix that a disk-bound class dominates), and the
// node's slowdown brings it to now. Chosen on the generated selection sets
// against the larger of the node's and the class's own slowdown (which
// counted a CPU class at a disk-bound class's slowdown and sent it late)
// and the class's own alone (docs/policy-history.md, "Each class at its
// pace against the node's").
func TaskStretch(node, classPace float64) float64 {
	st := stretchOf(node)
	if classPace > 0 && !math.IsInf(classPace, 1) {
		st *= classPace
	}
	return math.Max(1, st)
}
