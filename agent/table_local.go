package agent

import (
	"context"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

var _ serve.TableBackend = (*Agent)(nil)

// Table implements serve.TableBackend.
func (a *Agent) Table() (*wire.DecisionTable, time.Time) { return a.table.Table() }

// ReportLocal implements serve.TableBackend: decisions a client took from
// a decision table join the agent's books as if it had answered them
// itself. Each becomes a tracked task (feature 0 and the backlog features
// count it until its outcome), its guard's controller counts it, the shadow
// model sees it, and its outcome later makes an experience record with the
// state it was decided from: its table cell's state when that table is
// still kept (tableRetain), else the state the agent builds for it at the
// report. The priority recorded is the one the client served.
func (a *Agent) ReportLocal(ctx context.Context, ds []*wire.LocalDecision) (int, error) {
	if len(ds) == 0 {
		return 0, nil
	}
	now := time.Now()
	node := a.node.Load()
	qlen, work := a.tracker.load()
	ps := make([]*pendingTask, len(ds))
	tasks := make([]*wire.Task, len(ds))
	states := make([]policy.State, len(ds))
	decs := make([]policy.Decision, len(ds))
	var rebuilt []int
	for i, d := range ds {
		t := d.GetTask()
		desc := descriptor(t)
		a.table.demand.observe(desc.Class, t.GetSlaMs(), t.GetCostMs(), now)
		in := a.asm.TaskInputs(&node.inputs, &desc, qlen, now)
		a.asm.ObserveDecided(desc.SLAMs) // the node's mix counts local decisions too
		cost := knownOrZero(in.CostMs)
		// The client measured how long ago it decided; the agent's clock
		// dates the decision from that, bounded so that a bad report
		// cannot date a task out of the tracker's reach.
		age := min(time.Duration(d.GetAgeUs())*time.Microsecond, a.cfg.TaskTimeout/2)
		at := now.Add(-age)
		p := &pendingTask{id: wire.TaskID(t), desc: desc, costMs: cost, decidedAt: at, action: uint8(d.GetPriority())}
		p.ctl = a.controlTask(&desc, cost, at)
		if c, ok := a.table.cell(d.GetTableEpoch(), d.GetCell(), desc.Class); ok {
			p.state, p.q, p.model, decs[i] = c.state, c.dec.Q, c.model, c.dec
			a.table.m.local.WithLabelValues("table").Inc()
		} else {
			in.InFlightMs = work
			p.state = policy.Vector(&in)
			rebuilt = append(rebuilt, i)
			a.table.m.local.WithLabelValues("rebuilt").Inc()
		}
		ps[i], tasks[i], states[i] = p, t, p.state
	}
	if len(rebuilt) > 0 {
		a.evaluateRebuilt(ctx, rebuilt, ps, decs)
	}
	for i, p := range ps {
		if level := a.guardDecide(p, &decs[i]); level != int(p.action) {
			a.table.m.changed.Inc()
		}
		// The level the client served, dated at the report (the
		// decision's own date may lie behind the load's window).
		a.observeLevel(now, int(p.action), p.costMs, p.desc.SLAMs)
		evicted, replaced := a.tracker.add(p, nil)
		for _, ev := range evicted {
			a.timedOut(ev, now)
		}
		if replaced != nil {
			a.guardFinished(replaced, float64(now.Sub(replaced.decidedAt))/float64(time.Millisecond), 0)
		}
		a.metrics.decisions[p.action].Inc()
	}
	if a.shadow != nil {
		a.shadow.submit(tasks, states, decs)
	}
	return len(ds), nil
}

// evaluateRebuilt runs the model on the states built at the report (their
// table is gone), for the Q-values and the guard. A failure leaves them
// without Q-values: the decisions were served all the same, and the queue
// must count them.
func (a *Agent) evaluateRebuilt(ctx context.Context, idx []int, ps []*pendingTask, decs []policy.Decision) {
	states := make([]policy.State, len(idx))
	out := make([]policy.Decision, len(idx))
	for j, i := range idx {
		states[j] = ps[i].state
	}
	version, err := a.batch.decide(ctx, states, out)
	if err != nil {
		a.metrics.decideErrors.Inc()
		return
	}
	for j, i := range idx {
		ps[i].q, ps[i].model, decs[i] = out[j].Q, version, out[j]
	}
}
