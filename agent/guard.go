package agent

import (
	"math"
	"time"

	"github.com/triage-agent/triage/agent/state"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
	"github.com/triage-agent/triage/policy/guard"
)

// The agent's guard: every decision of the model goes through it, and the
// tasks the model is unsure of are decided by the guard's controller
// (policy/guard). The controller runs on the agent's own clock, ms since
// the agent started: a task arrives when it is decided and finishes when
// its outcome says, so the controller measures what it would measure
// deciding alone in the service.

// newGuard is the guard cfg asks for; nil when it is "none".
func newGuard(cfg Config) (*guard.Guard, error) {
	return guard.NamedOrNone(cfg.Guard, guard.Config{MinAgreement: float32(cfg.GuardMinAgreement), OutOfRange: !cfg.GuardIgnoreRange,
		KeepUrgentMs: cfg.GuardKeepUrgentMs, MinAdvantage: float32(cfg.GuardMinAdvantage)})
}

// clockMs is t on the controllers' clock.
func (a *Agent) clockMs(t time.Time) float64 {
	return float64(t.Sub(a.started)) / float64(time.Millisecond)
}

// controlTask is a task as the controller knows it. A task without an SLA
// has no deadline (+Inf), so no controller takes it for urgent work.
func (a *Agent) controlTask(d *state.Descriptor, costMs float64, at time.Time) control.Task {
	sla := d.SLAMs
	if !(sla > 0) || math.IsInf(sla, 0) {
		sla = math.Inf(1)
	}
	return control.Task{ArrivalMs: a.clockMs(at), SLAMs: sla, ExpectedMs: costMs}
}

// guardDecide is the priority served for p, which the model decided as d:
// d's own without a guard, else the guard's. p.ctl must be set.
func (a *Agent) guardDecide(p *pendingTask, d *policy.Decision) int {
	if a.guard == nil {
		return d.Priority
	}
	level, why := a.guard.Decide(&p.ctl, d)
	if why != guard.Network {
		a.metrics.guarded[why].Inc()
	}
	return level
}

// guardFinished tells the guard's controller that p finished latencyMs
// after it was decided, serviceMs of it in service. An unknown service
// time (0: the upstream did not report it, or the task timed out or was
// re-decided) is taken as the expected cost, at most the latency: the
// rest of the latency was queueing.
func (a *Agent) guardFinished(p *pendingTask, latencyMs, serviceMs float64) {
	if a.guard == nil {
		return
	}
	latencyMs = max(latencyMs, 0)
	if !(serviceMs > 0) {
		serviceMs = p.ctl.ExpectedMs
	}
	finish := p.ctl.ArrivalMs + latencyMs
	a.guard.Observe(&p.ctl, finish-min(serviceMs, latencyMs), finish)
}
