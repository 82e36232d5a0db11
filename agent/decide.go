package agent

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/triage-agent/triage/agent/state"
	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// The agent is the endpoint's serve.Backend.

type decideScratch struct {
	descs  []state.Descriptor
	states []policy.State
	out    []policy.Decision
	costs  []float64
}

var scratchPool = sync.Pool{New: func() any { return &decideScratch{} }}

// descriptor is what the agent uses of a task's descriptor.
func descriptor(t *wire.Task) state.Descriptor {
	return state.Descriptor{Class: className(t), SLAMs: float64(t.GetSlaMs()), CostMs: float64(t.GetCostMs())}
}

// Decide implements serve.Backend: one state vector per task, one batched
// model call shared with every other client's tasks, one decision each.
func (a *Agent) Decide(ctx context.Context, tasks []*wire.Task) ([]*wire.Decision, string, uint64, error) {
	start := time.Now()
	node := a.node.Load()
	if len(tasks) == 0 {
		return nil, a.model.Version(), node.wire.GetEpoch(), nil
	}
	qlen, work := a.tracker.load()
	sc := scratchPool.Get().(*decideScratch)
	n := len(tasks)
	if cap(sc.states) < n {
		sc.descs, sc.states, sc.out = make([]state.Descriptor, n), make([]policy.State, n), make([]policy.Decision, n)
	}
	descs, states, out := sc.descs[:n], sc.states[:n], sc.out[:n]
	costs := sc.costs[:0]
	for i, t := range tasks {
		descs[i] = descriptor(t)
		a.table.observe(&descs[i], start)
		in := a.asm.TaskInputs(&node.inputs, &descs[i], qlen, start)
		in.InFlightMs = work
		states[i] = policy.Vector(&in)
		a.asm.ObserveDecided(descs[i].SLAMs) // after its own state, as the simulator's arrivals
		costs = append(costs, knownOrZero(in.CostMs))
	}
	sc.costs = costs
	version, err := a.batch.decide(ctx, states, out)
	if err != nil {
		if ctx.Err() != nil {
			// The batch may still write into out: leave sc to the GC.
			a.metrics.abandoned.Add(float64(n))
			return nil, "", 0, fmt.Errorf("client gone before its batch finished: %w", ctx.Err())
		}
		scratchPool.Put(sc)
		a.metrics.decideErrors.Inc()
		return nil, "", 0, err
	}
	msgs := make([]wire.Decision, n)
	qs := make([]float32, n*policy.NumActions)
	res := make([]*wire.Decision, n)
	now := time.Now()
	for i := range out {
		p := &pendingTask{
			id: wire.TaskID(tasks[i]), desc: descs[i],
			state: states[i], costMs: costs[i], q: out[i].Q, model: version, decidedAt: now,
			ctl: a.controlTask(&descs[i], costs[i], now),
		}
		// The priority served is the guard's: the model's where it is sure.
		level := a.guardDecide(p, &out[i])
		p.action = uint8(level)
		a.observeLevel(now, level, costs[i], descs[i].SLAMs)
		q := qs[i*policy.NumActions : (i+1)*policy.NumActions : (i+1)*policy.NumActions]
		copy(q, out[i].Q[:])
		// The id comes back in the field(s) it came in (wire.TaskID's rule).
		msgs[i].Id, msgs[i].TaskId, msgs[i].Priority, msgs[i].Q = tasks[i].GetId(), tasks[i].GetTaskId(), uint32(level), q
		res[i] = &msgs[i]
		evicted, replaced := a.tracker.add(p, nil)
		for _, ev := range evicted {
			a.timedOut(ev, now)
		}
		if replaced != nil {
			// Its outcome will never come (the id now names p): the
			// controller counts it finished, so its count in flight holds.
			a.guardFinished(replaced, float64(now.Sub(replaced.decidedAt))/float64(time.Millisecond), 0)
		}
		a.metrics.decisions[level].Inc()
	}
	if a.shadow != nil {
		a.shadow.submit(tasks, states, out)
	}
	scratchPool.Put(sc)
	a.metrics.decideLatency.Observe(time.Since(start).Seconds())
	return res, version, node.wire.GetEpoch(), nil
}

// ReportOutcomes implements serve.Backend: each outcome of a tracked task
// becomes a reward and an experience record; an unknown id is counted and
// skipped (its decision came from before a restart, or it timed out).
func (a *Agent) ReportOutcomes(_ context.Context, outs []*wire.Outcome) error {
	for _, o := range outs {
		if err := wire.CheckOutcome(o); err != nil {
			return err
		}
	}
	now := time.Now()
	node := a.node.Load()
	recs := recordPool.Get().(*[]experience.Record)
	defer func() {
		clear(*recs)
		*recs = (*recs)[:0]
		recordPool.Put(recs)
	}()
	for _, o := range outs {
		p, ok := a.tracker.finish(wire.TaskID(o))
		if !ok {
			a.metrics.outcomesUnknown.Inc()
			continue
		}
		lat := float64(o.GetLatencyMs())
		// Features 3 and 4 are the class's service times, as the simulator
		// trains them. An outcome without service_ms only has the latency,
		// which includes the wait: under a long queue it makes every class
		// look long, and the policy then sends urgent work to the
		// background tier. So service_ms, when the upstream reports it.
		svc := lat
		if s := float64(o.GetServiceMs()); s > 0 {
			svc = s
		}
		a.asm.Classes().Observe(p.desc.Class, svc)
		if s := float64(o.GetServiceMs()); s > 0 {
			a.asm.ObserveWait(now, lat-s)          // features 12, 13: only a reported service time tells the wait
			a.asm.ObserveService(s, p.desc.CostMs) // the background reserve's gate
		}
		a.guardFinished(p, lat, float64(o.GetServiceMs()))
		if rec, ok := a.finished(p, node, now, lat, o.GetSlaMet(), false); ok {
			*recs = append(*recs, rec)
		}
	}
	// One write for the report's records, not one each.
	a.logExperience(now, *recs...)
	return nil
}

// recordPool holds the experience records of one outcome report.
var recordPool = sync.Pool{New: func() any { return new([]experience.Record) }}

// timedOut records a task whose outcome never came as a missed SLA at the timeout.
func (a *Agent) timedOut(p *pendingTask, now time.Time) {
	a.metrics.timeouts.Inc()
	latency := float64(now.Sub(p.decidedAt).Milliseconds())
	a.guardFinished(p, latency, 0)
	if rec, ok := a.finished(p, a.node.Load(), now, latency, false, true); ok {
		a.logExperience(now, rec)
	}
}

// finished scores a finished task and returns its experience record (ok
// false when there is no experience log) for the caller to log.
func (a *Agent) finished(p *pendingTask, node *nodeSnapshot, now time.Time, latencyMs float64, met, timedOut bool) (experience.Record, bool) {
	phase := a.phase(now, node)
	util := node.inputs.CPUUtil
	reward := policy.Reward(phase, latencyMs, p.desc.SLAMs, met, 1, util)
	a.metrics.outcomes.WithLabelValues(phase.String()).Inc()
	a.metrics.reward.Observe(reward)
	if a.exp == nil {
		return experience.Record{}, false
	}
	// The next state is the same task's as it finishes, against the queue,
	// its backlog per priority and the node as they are now: built as
	// Decide builds a state, so that a transition's two states agree.
	qlen, work := a.tracker.load()
	in := a.asm.TaskInputs(&node.inputs, &p.desc, qlen, now)
	in.InFlightMs = work
	next := policy.Vector(&in)
	return experience.Record{
		UnixNano: now.UnixNano(), TaskID: p.id, Class: truncate(p.desc.Class, experience.MaxStringBytes),
		State: p.state, Action: p.action, Q: p.q, Reward: float32(reward), Phase: phase.String(),
		LatencyMs: float32(latencyMs), SLAMet: met, Model: truncate(p.model, experience.MaxStringBytes),
		Next: next, TimedOut: timedOut,
	}, true
}

// logExperience appends records to the experience log in one write.
func (a *Agent) logExperience(now time.Time, recs ...experience.Record) {
	if a.exp == nil || len(recs) == 0 {
		return
	}
	if err := a.exp.AppendAll(recs); err != nil {
		a.metrics.experienceErrors.Add(float64(len(recs)))
		// One line a minute at most: a full disk must not flood the log.
		if last := a.expErrLog.Load(); now.UnixNano()-last > int64(time.Minute) && a.expErrLog.CompareAndSwap(last, now.UnixNano()) {
			a.log.Error("experience log append failed", "err", err)
		}
	}
}

// className is the task's class cut as the class statistics key it: a
// frame may carry a megabyte of class name, and the agent tracks tens of
// thousands of tasks.
func className(t *wire.Task) string { return state.ClassKey(t.GetClass()) }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// peakQueuePerWorker is the tasks in flight per worker above which the
// reward's peak weights apply: a queue of a few tasks per worker means the
// offered load is above what the node serves.
const peakQueuePerWorker = 4

// modelUpdateWindow is how long after a swap outcomes are scored with the
// model-update weights.
const modelUpdateWindow = 30 * time.Second

// phase picks the reward weights: model-update for 30 s after a swap; peak
// when more than peakQueuePerWorker tasks per worker are in flight or the
// CPU is saturated (the agent cannot see the offered load the simulator
// uses, so it reads its consequences); steady otherwise.
func (a *Agent) phase(now time.Time, node *nodeSnapshot) policy.RewardPhase {
	if s := a.lastSwap.Load(); s != 0 && now.UnixNano()-s < int64(modelUpdateWindow) {
		return policy.RewardModelUpdate
	}
	perWorker := float64(a.tracker.len()) / float64(a.cfg.Workers)
	if perWorker >= peakQueuePerWorker || node.inputs.CPUUtil >= 0.95 {
		return policy.RewardPeak
	}
	return policy.RewardSteady
}

// State implements serve.Backend.
func (a *Agent) State() *wire.NodeState { return a.node.Load().wire }

// refreshNode reads the node signals into a new snapshot (a new epoch).
func (a *Agent) refreshNode(now time.Time) {
	n := &nodeSnapshot{}
	a.signals.Snapshot(&n.signals)
	qlen := a.tracker.len()
	n.inputs = a.asm.NodeInputs(&n.signals, now)
	n.features = a.asm.Features(&n.signals, qlen, now)
	vec := n.features.Vector()
	tightest := a.asm.ForegroundSLA(now)
	fg := a.asm.Foreground(now)
	n.foregroundGone = policy.ForegroundGone(fg.IdleMs)
	n.wire = &wire.NodeState{
		Epoch: a.epoch.Add(1), UnixNano: now.UnixNano(), Features: vec[:], Sources: n.features.Sources(),
		RunqP50Us: float32(orZero(n.inputs.RunqP50Us)), RunqP99Us: float32(orZero(n.inputs.RunqP99Us)),
		QueueLen: uint32(qlen), QueueCap: uint32(a.asm.Workers()), CpuUtil: float32(orZero(n.inputs.CPUUtil)),
		Node: a.cfg.NodeName, BackgroundReserve: wire.ReserveField(a.reserve(&vec, fg)),
		BackgroundShortMs:     float32(policy.ShortBackgroundMs(tightest, a.asm.Slowdown())),
		BackgroundUrgentSlaMs: float32(policy.UrgentBackgroundSLAMs(tightest)),
	}
	if a.model != nil {
		n.wire.Model = a.model.Version()
	}
	a.node.Store(n)
}

// reserve is the background reserve the agent sends for the node state
// vec, whose foreground is fg (policy.ServedReserve): policy.Reserve of the
// state and the work's slowdown, a contended one sized to the foreground's
// recent load unless the run queue says the CPUs are oversubscribed, none
// where the foreground has gone from a calm node
// (policy.NoForegroundToProtect; sent as wire.NoReserve), and no more than
// the workers beyond the executor's CPUs where it has gone from
// oversubscribed ones (policy.ReserveOnBusyCPUs).
func (a *Agent) reserve(vec *policy.State, fg policy.Foreground) float64 {
	return policy.ServedReserve(vec, a.asm.Slowdown(), fg, a.asm.Workers(), a.cfg.CPUs)
}

// observeLevel records one task decided at now at level (by the agent, or
// locally by a client), whose expected cost is costMs and whose SLA is
// slaMs, for the foreground's load and idle time
// (state.Assembler.ObserveLevel). A task at level 1 or more decided while
// the node's snapshot was taken with the foreground gone (the reserve then
// released or bounded: policy.NoForegroundToProtect,
// policy.ReserveOnBusyCPUs) asks the state loop for a node snapshot now:
// the reserve then comes back at once, not at the next tick, in the
// answers and in the clients' tables. It never blocks.
func (a *Agent) observeLevel(now time.Time, level int, costMs, slaMs float64) {
	a.asm.ObserveLevel(now, level, costMs, slaMs)
	if level < 1 {
		return
	}
	if n := a.node.Load(); n == nil || !n.foregroundGone {
		return
	}
	select {
	case a.refresh <- struct{}{}:
	default: // one is already asked for
	}
}

// knownOrZero is x, or 0 when it is unknown (NaN, infinite, negative).
func knownOrZero(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return 0
	}
	return x
}

func orZero(x float64) float64 {
	if math.IsNaN(x) || x < 0 {
		return 0
	}
	return x
}
