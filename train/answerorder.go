package train

import (
	"errors"
	"fmt"
)

// AnswerOrder is how an executor orders the agent's answers within one
// priority. The agent answers a priority and nothing else, so the order
// within a level is the executor's; the project's executors (the
// simulator's dqn rows, bench e2e) follow this setting, the zero value
// ShortestFirst by default.
type AnswerOrder uint8

const (
	// ShortestFirst serves a level shortest expected cost first: the
	// network has already said which tasks matter more, and within a level
	// the shortest first finishes the most of them (the late-work rule
	// keeps a task that can still make its deadline from being overtaken
	// by one that cannot). Chosen on generated scenarios against
	// DeadlineFirst: +3 to +5.6 points on every generated set
	// (docs/policy.md, "The order within a level").
	ShortestFirst AnswerOrder = iota
	// DeadlineFirst serves a level earliest deadline first, the order
	// until the fifteenth session and the trainer's own: better where
	// the classes already separate the work by level (up to a point on
	// the shared files), worse under overload.
	DeadlineFirst
)

// trainerOrder is the order the trainer's episodes, its checkpoint
// validation and `triage train`'s report serve the network's levels in:
// the shipped model was trained under DeadlineFirst, and three trainings
// under ShortestFirst scored lower (docs/policy.md, "The order within a
// level"), so training keeps it while the agent's executors serve
// ShortestFirst.
const trainerOrder = DeadlineFirst

// ErrBadAnswerOrder reports an order that is neither shortest nor deadline.
var ErrBadAnswerOrder = errors.New("bad answer order: want shortest or deadline")

// Key is t's place within its level under o: smaller first.
func (o AnswerOrder) Key(t *Task) float64 {
	if o == DeadlineFirst {
		return t.DeadlineMs()
	}
	return t.ExpectedMs
}

func (o AnswerOrder) String() string {
	if o == DeadlineFirst {
		return "deadline"
	}
	return "shortest"
}

// ParseAnswerOrder reads "shortest" or "deadline"; "" is the default.
func ParseAnswerOrder(s string) (AnswerOrder, error) {
	switch s {
	case "", "shortest":
		return ShortestFirst, nil
	case "deadline":
		return DeadlineFirst, nil
	}
	return 0, fmt.Errorf("%w, not %q", ErrBadAnswerOrder, s)
}
