package train

import "github.com/triage-agent/triage/policy"

// stretches is the factor each class's expected costs are taken at by an
// adaptiveQueue during one pop (policy.TaskStretch: the node's slowdown
// times the class's pace against it), read from the executor's slowdowns
// once per class a pop meets and cached by class, so a plan over hundreds
// of tasks reads the windows a few times rather than once a task.
type stretches struct {
	from *policy.Slowdowns // nil: none known, every stretch 1
	node float64           // the node's slowdown at this pop
	// by is the stretch by class, 0 until read this pop; classes below hi
	// may have been read.
	by [policy.MaxSlowdownClasses]float64
	hi int
}

// reset starts a pop: the slowdowns may have moved since the last.
func (s *stretches) reset() {
	clear(s.by[:s.hi])
	s.hi = 0
	if s.from != nil {
		s.node = s.from.Value()
	}
}

// of is the stretch of a task of class c at this pop: the cached one, a
// load and a compare (inlined: the plan asks once a task).
func (s *stretches) of(c int) float64 {
	if uint(c) < policy.MaxSlowdownClasses {
		if v := s.by[c]; v != 0 {
			return v
		}
	}
	return s.read(c)
}

// read reads class c's stretch and caches it for the rest of the pop
// (a class index out of policy.MaxSlowdownClasses is read each time).
func (s *stretches) read(c int) float64 {
	st := 1.0
	if s.from != nil {
		st = policy.TaskStretch(s.node, s.from.ClassPace(c))
	}
	if uint(c) < policy.MaxSlowdownClasses {
		s.by[c] = st
		s.hi = max(s.hi, c+1)
	}
	return st
}
