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
	// AdaptiveOrder, the zero value, serves each level by a plan
	// (levelPlan, after Moore and Hodgson): its tasks taken by deadline,
	// the longest set aside wherever the rest would miss theirs, the kept
	// ones earliest deadline first; a crowded level (more than
	// crowdPerWorker × workers of its tasks can still make their deadline)
	// is planned as draining crowdedPlanStretch times slower, for the work
	// still to arrive. It counts a task as one that can no longer make its
	// deadline by its expected cost stretched by the node's slowdown (the
	// executor's recent service times over the described costs). Where
	// every deadline can be met the plan is earliest deadline first, the
	// order that meets them all; under overload it gives up the longest
	// work, as shortest first does, without letting short work overtake
	// the rest of its class. Chosen on generated scenarios and the
	// project's files over the crowded shortest-first order it replaced
	// (docs/policy-history.md, "The order within a level" and "A plan
	// that sets the longest aside").
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
// under ShortestFirst scored lower (docs/policy-history.md, "The order
// within a level"), so training keeps it while the agent's executors
// serve AdaptiveOrder.
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
