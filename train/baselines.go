package train

import (
	"fmt"
	"sort"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
)

// FIFO serves tasks in arrival order.
type FIFO struct{}

func (FIFO) KeyOrdered()  {}
func (FIFO) Name() string { return "fifo" }
func (FIFO) Assign(t *Task, _ *NodeView) (int, float64, error) {
	return 0, t.ArrivalMs, nil
}

// EDF serves the earliest deadline first.
type EDF struct{}

func (EDF) KeyOrdered()  {}
func (EDF) Name() string { return "edf" }
func (EDF) Assign(t *Task, _ *NodeView) (int, float64, error) {
	return 0, t.DeadlineMs(), nil
}

// SJF serves the shortest expected cost first (the descriptor's estimate,
// not the true cost, which no one knows in advance).
type SJF struct{}

func (SJF) KeyOrdered()  {}
func (SJF) Name() string { return "sjf" }
func (SJF) Assign(t *Task, _ *NodeView) (int, float64, error) {
	return 0, t.ExpectedMs, nil
}

// StaticClass gives each class a fixed priority by SLA tightness: the
// tightest SLA gets 4, the next 3, and so on (classes beyond five share 0),
// EDF within a level.
type StaticClass struct{ level []int }

// NewStaticClass ranks sc's classes by SLA.
func NewStaticClass(sc *Scenario) *StaticClass {
	order := make([]int, len(sc.Classes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return sc.Classes[order[a]].SLAMs < sc.Classes[order[b]].SLAMs })
	lv := make([]int, len(sc.Classes))
	for rank, ci := range order {
		lv[ci] = max(0, policy.NumActions-1-rank)
	}
	return &StaticClass{level: lv}
}

func (*StaticClass) Name() string { return "static-class" }
func (s *StaticClass) Assign(t *Task, _ *NodeView) (int, float64, error) {
	if t.Class < 0 || t.Class >= len(s.level) {
		return 0, 0, fmt.Errorf("static-class: class %d unknown", t.Class)
	}
	return s.level[t.Class], t.DeadlineMs(), nil
}

// SlackRule is the best hand-written rule we found, in the same executor
// as the DQN (a level at arrival, late work after feasible work), deadline
// order within a level:
//
//   - tiers by the task's own SLA, so it needs no class table: under 50 ms
//     → 4, under 500 ms → 3, else 2, earliest deadline first within a tier;
//   - a task whose own expected cost already exceeds its SLA cannot make
//     it: 0;
//   - a task that, given the feasible work already queued at its tier or
//     above (NodeView.WaitMs), would start later than three times its SLA is
//     hopeless: 1, below every tier that can still be served.
//
// It demotes so little because the executor's late-work rule already
// serves hopeless work last: stricter demotion only loses the tasks a
// prediction wrongly gives up on (docs/history/training-v1.md has the
// measurements).
type SlackRule struct{}

func (SlackRule) Name() string { return "slack-rule" }
func (SlackRule) Assign(t *Task, v *NodeView) (int, float64, error) {
	level := 2
	switch {
	case t.SLAMs < 50:
		level = 4
	case t.SLAMs < 500:
		level = 3
	}
	if t.ExpectedMs > t.SLAMs {
		return 0, t.DeadlineMs(), nil
	}
	if v.WaitMs(level) > 3*t.SLAMs {
		return 1, t.DeadlineMs(), nil
	}
	return level, t.DeadlineMs(), nil
}

// ReserveRule is the best hand-written rule we found for this executor:
// a task whose SLA is under 50 ms is urgent (level 4, may take any worker);
// every other task is background (level 0), so the last free workers
// (BackgroundReserve) stay with the urgent ones; deadline order within
// each. Under non-preemptive service what loses urgent tasks is long work
// holding every worker, and this rule is the plainest way to stop it.
//
// The variants it was measured against (more tiers, demotion by
// predicted wait, a second background tier) are in
// docs/history/training-v1.md.
//
// The rule itself is control.Reserve, which the agent's guard can run too.
type ReserveRule struct{}

func (ReserveRule) Name() string { return "reserve-rule" }
func (ReserveRule) Assign(t *Task, _ *NodeView) (int, float64, error) {
	level, key := control.NewReserve(control.DefaultReserve).Decide(&control.Task{ArrivalMs: t.ArrivalMs, SLAMs: t.SLAMs, ExpectedMs: t.ExpectedMs})
	return level, key, nil
}

// Baselines returns every baseline for sc, in report order.
func Baselines(sc *Scenario) []Policy {
	return append([]Policy{FIFO{}, EDF{}, SJF{}, NewStaticClass(sc), SlackRule{}, ReserveRule{}}, Controllers()...)
}

// DeciderPolicy puts a policy.Decider (an ONNX Runtime session or the plain
// Go MLP) in the executor: level = its priority, ordered within a level
// as the agent's answers are served (Order).
type DeciderPolicy struct {
	Label   string
	Decider policy.Decider
	Order   AnswerOrder // the zero value: AdaptiveOrder
	states  [1]policy.State
	out     [1]policy.Decision
}

func (p *DeciderPolicy) Name() string { return p.Label }

func (p *DeciderPolicy) answerOrder() AnswerOrder { return p.Order }
func (p *DeciderPolicy) Assign(t *Task, v *NodeView) (int, float64, error) {
	p.states[0] = v.State
	if err := p.Decider.Decide(p.states[:], p.out[:]); err != nil {
		return 0, 0, fmt.Errorf("%s: deciding: %w", p.Label, err)
	}
	return p.out[0].Priority, p.Order.Key(t), nil
}

// MLPPolicy is the greedy policy of an MLP, computed in plain Go. It is
// the trainer's (checkpoint validation, `triage train`'s report), so it
// serves its levels in the trainer's order (trainerOrder).
type MLPPolicy struct {
	Label   string
	Net     *policy.MLP
	scratch []float32
}

func (p *MLPPolicy) Name() string { return p.Label }
func (p *MLPPolicy) Assign(t *Task, v *NodeView) (int, float64, error) {
	return p.greedy(&v.State), trainerOrder.Key(t), nil
}

// greedy is the network's best priority in state st.
func (p *MLPPolicy) greedy(st *policy.State) int {
	var q [policy.NumActions]float32
	p.Net.Forward(st, &q, p.scratch)
	return policy.Argmax(&q)
}
