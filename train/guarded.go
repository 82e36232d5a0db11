package train

import (
	"fmt"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
	"github.com/triage-agent/triage/policy/guard"
)

// GuardedPolicy is the policy as the agent serves it: the network decides
// each task through its guard, which hands the tasks the network is unsure
// of to the guard's controller. It is the `dqn` row of `triage eval`.
type GuardedPolicy struct {
	Label   string
	Decider policy.Decider
	Guard   *guard.Guard
	// Counts is the decisions by who made them (guard.Network for the
	// network's own), summed over every run since the policy was made:
	// Reset, which the simulator calls before each run, resets the
	// controller, not the counts.
	Counts [guard.NumReasons]int
	// Order is how the executor orders every answer within a level,
	// whoever decided it (the zero value: AdaptiveOrder).
	Order AnswerOrder

	states [1]policy.State
	out    [1]policy.Decision
	task   control.Task // reused: controllers keep no pointer to a task
}

// NewGuardedPolicy wraps d with g under label.
func NewGuardedPolicy(label string, d policy.Decider, g *guard.Guard) *GuardedPolicy {
	return &GuardedPolicy{Label: label, Decider: d, Guard: g}
}

func (p *GuardedPolicy) Name() string { return p.Label }

func (p *GuardedPolicy) answerOrder() AnswerOrder { return p.Order }

// Reset makes the guard's controller forget the previous run.
func (p *GuardedPolicy) Reset() { p.Guard.Reset() }

// Assign implements Policy.
func (p *GuardedPolicy) Assign(t *Task, v *NodeView) (int, float64, error) {
	p.states[0] = v.State
	if err := p.Decider.Decide(p.states[:], p.out[:]); err != nil {
		return 0, 0, fmt.Errorf("%s: deciding: %w", p.Label, err)
	}
	// The controller's key is not the agent's to give: the wire carries the
	// priority alone, and the executor orders every answer by p.Order.
	level, why := p.Guard.Decide(p.controlTask(t), &p.out[0])
	p.Counts[why]++
	return level, p.Order.Key(t), nil
}

// Finished implements Observer: the guard's controller measures every
// finished task, whoever decided it.
func (p *GuardedPolicy) Finished(t *Task, startMs, nowMs float64) {
	p.Guard.Observe(p.controlTask(t), startMs, nowMs)
}

// Guarded is how many decisions the guard took from the network.
func (p *GuardedPolicy) Guarded() int {
	n := 0
	for r, c := range p.Counts {
		if guard.Reason(r) != guard.Network {
			n += c
		}
	}
	return n
}

// Decisions is how many tasks the policy decided.
func (p *GuardedPolicy) Decisions() int {
	n := 0
	for _, c := range p.Counts {
		n += c
	}
	return n
}

func (p *GuardedPolicy) controlTask(t *Task) *control.Task {
	p.task = control.Task{ArrivalMs: t.ArrivalMs, SLAMs: t.SLAMs, ExpectedMs: t.ExpectedMs}
	return &p.task
}
