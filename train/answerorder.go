package train

import (
	"errors"
	"fmt"
)

// AnswerOrder is how an executor orders the agent's answers within one
// priority. The agent answers a priority and nothing else, so the order
// within a level is the executor's; the project's executors (the
// simulator's dqn rows, bench e2e) follow this setting.
type AnswerOrder uint8

const (
	// AdaptiveOrder, the zero value, serves a level earliest deadline
	// first while it is not crowded, and shortest expected cost first
	// (weighted by the root of the SLA; work within a factor of two of
	// each other's by deadline) while it is (more than crowdPerWorker ×
	// workers of its tasks can still make their deadline), and counts a
	// task as one that can no longer make it by its expected cost
	// stretched by the node's slowdown (the executor's recent service
	// times over the described costs). Earliest deadline
	// first is the order that meets every deadline where any order can;
	// the slowdown keeps it from starting work that will finish late, and
	// a crowded level is an overload, where shortest first finishes the
	// most. Chosen on generated scenarios and the project's files over
	// ShortestFirst: level or better on every set, with fewer scenarios
	// under their best baseline (docs/policy.md, "The order within a level").
	AdaptiveOrder AnswerOrder = iota
	// ShortestFirst serves a level shortest expected cost first: within a
	// level the shortest first finishes the most tasks under overload
	// (the late-work rule keeps a task that can still make its deadline
	// from being overtaken by one that cannot). The default from the
	// fifteenth session to the nineteenth.
	ShortestFirst
	// DeadlineFirst serves a level earliest deadline first, the order
	// until the fifteenth session and the trainer's own: better where
	// the classes already separate the work by level, worse under
	// overload, where work that runs slower than described starts "in
	// time" and finishes late.
	DeadlineFirst
)

// trainerOrder is the order the trainer's episodes, its checkpoint
// validation and `triage train`'s report serve the network's levels in:
// the shipped model was trained under DeadlineFirst, and three trainings
// under ShortestFirst scored lower (docs/policy.md, "The order within a
// level"), so training keeps it while the agent's executors serve
// AdaptiveOrder.
const trainerOrder = DeadlineFirst

// ErrBadAnswerOrder reports an order that is not one of the three.
var ErrBadAnswerOrder = errors.New("bad answer order: want adaptive, shortest or deadline")

// Key is t's place within its level under o: smaller first.
func (o AnswerOrder) Key(t *Task) float64 {
	if o == ShortestFirst {
		return t.ExpectedMs
	}
	return t.DeadlineMs()
}

func (o AnswerOrder) String() string {
	switch o {
	case DeadlineFirst:
		return "deadline"
	case AdaptiveOrder:
		return "adaptive"
	}
	return "shortest"
}

// ParseAnswerOrder reads "adaptive", "shortest" or "deadline"; "" is the
// default, AdaptiveOrder.
func ParseAnswerOrder(s string) (AnswerOrder, error) {
	switch s {
	case "", "adaptive":
		return AdaptiveOrder, nil
	case "shortest":
		return ShortestFirst, nil
	case "deadline":
		return DeadlineFirst, nil
	}
	return 0, fmt.Errorf("%w, not %q", ErrBadAnswerOrder, s)
}
