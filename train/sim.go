package train

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/triage-agent/triage/policy"
)

// Policy assigns each task its place in the node's queue, once, at arrival.
//
// The executor contract (the simulator here, the e2e executor elsewhere):
// a free worker takes the queued task with the highest level; within a
// level the one with the smallest key; ties by arrival order. Priority
// policies use level = priority 0..4 and key = deadline (EDF within a
// level); whole-queue baselines use level 0 and their own key (arrival
// time for FIFO, deadline for EDF, expected cost for SJF). Service is
// non-preemptive and work-conserving.
type Policy interface {
	Name() string
	Assign(t *Task, v *NodeView) (level int, key float64, err error)
}

// Observer is a policy that measures its node as a controller in a
// service does: it is told of each finished task, when it started and when
// it finished, in the executor's clock (ms). The simulator, the e2e
// executor and the agent's guard (from reported outcomes) all call it with
// the same meaning.
type Observer interface {
	Finished(t *Task, startMs, nowMs float64)
}

// Outcome is what happened to one task.
type Outcome struct {
	Task
	Level    int
	Key      float64
	State    policy.State // the state vector the decision saw
	StartMs  float64
	FinishMs float64
	Finished bool
	Met      bool
	Phase    Phase
	Util     float64 // CPU utilisation when it finished
	Reward   float64 // the reward of DESIGN.md; a task unfinished at the end is scored as a missed SLA then
	// Harm is the reward this task's start took from the tasks it
	// overtook (see simulator.harmOf); only tracked with SimConfig.TrackHarm.
	Harm float64
	// Blame is this task's share of the waits it caused (see assignBlame);
	// only computed with SimConfig.TrackBlame.
	Blame float64
	// Started is whether the task ever got a worker (StartMs is then set).
	Started bool
	// HeldBack is whether it started while its executor held more than
	// the calm reserve (policy.CalmReserve) of the workers back from
	// background work: the node counted as contended then. Counted per
	// period (PeriodCount.Held), so the simulator and a real run say in
	// which stretches the policy held workers back.
	HeldBack bool
	// ShortStart is whether it started in the background on a worker its
	// executor's reserve held, let through as short work (beyond the calm
	// quarter: policy.Hold.ShortMs) or as urgent work
	// (policy.Hold.UrgentSLAMs; MarkStart).
	ShortStart bool
}

// LatencyMs is finish − arrival; for an unfinished task it is the time it
// had waited when the run ended (a lower bound).
func (o *Outcome) LatencyMs() float64 { return o.FinishMs - o.ArrivalMs }

// ServiceMs is how long the task held its worker: its cost stretched by
// the node's contention (what an upstream reports as service_ms). For a
// task still in service when the run ended, the time it had held it; 0 for
// one that never started.
func (o *Outcome) ServiceMs() float64 {
	if !o.Started {
		return 0
	}
	return o.FinishMs - o.StartMs
}

// SimConfig tunes a run. The zero value means defaults.
type SimConfig struct {
	// Seed of the arrivals and the signal noise; 0 uses the scenario's.
	Seed int64
	// TrackHarm computes each task's Harm (costs a queue scan per start).
	TrackHarm bool
	// TrackBlame computes each task's Blame when the run ends.
	TrackBlame bool
	// MissingSources is the probability that each kernel-signal source is
	// absent for the whole run (its features neutral); see newSignals.
	MissingSources float64
	// VaryNode is the probability that this run's node reads its kernel
	// features unlike the calibrated node (nodeVariation): training's
	// default is DefaultVaryNode; evaluation's 0, it reports on the
	// calibrated node.
	VaryNode float64
	// Calibration is what the node's signals and slowdowns are drawn from;
	// nil uses DefaultCalibration.
	Calibration *Calibration
	// NoServiceTimes is an upstream that reports no service times: the
	// policies never know the node's slowdown (NodeView.Slowdown is NaN),
	// so the background reserve follows the kernel alone, as the agent's
	// does for such an upstream (policy.Reserve).
	NoServiceTimes bool
	// EagerAccept is a service that accepts every connection at once and
	// queues its work in process, so its listen queue stays empty whatever
	// its backlog: the accept-queue feature reads 0, where the default node
	// fills it with the executor's backlog (signals). bench e2e's executor
	// is one.
	EagerAccept bool
	// OnDecide, when set, is called after each decision; OnFinish after
	// each finished task, in simulated-time order. They let the trainer
	// learn while the run goes on.
	OnDecide func(o *Outcome)
	OnFinish func(o *Outcome)
}

// ErrBadAction is returned when a policy answers a level outside 0..4.
var ErrBadAction = errors.New("policy returned a level outside 0..4")

// Run simulates sc under p and returns one outcome per task, in arrival order.
func Run(sc *Scenario, p Policy, cfg SimConfig) ([]Outcome, error) {
	seed := cfg.Seed
	if seed == 0 {
		seed = sc.Seed
	}
	return RunTasks(sc, sc.Arrivals(seed), p, cfg)
}

// RunTasks simulates pre-generated arrivals (so callers can pair policies on
// exactly the same tasks without regenerating them).
func RunTasks(sc *Scenario, tasks []Task, p Policy, cfg SimConfig) ([]Outcome, error) {
	seed := cfg.Seed
	if seed == 0 {
		seed = sc.Seed
	}
	s := newSimulator(sc, cfg, seed)
	if r, ok := p.(Resetter); ok {
		r.Reset()
	}
	out := make([]Outcome, len(tasks))
	for i := range tasks {
		out[i] = Outcome{Task: tasks[i]}
	}
	s.out = out
	s.target = make([]float64, len(out))
	s.inWake = phaseHeap(s.target, out)
	s.inCPU = phaseHeap(s.target, out)
	s.inIO = phaseHeap(s.target, out)
	s.queue = newQueue(p, &s.out, sc.Workers, &s.sig.slowdown)
	s.feasible = newFeasibleWork(&s.out)
	s.view.policy, s.view.CPUs = p, sc.NodeCPUs()
	if err := s.run(p); err != nil {
		return nil, fmt.Errorf("simulating %s under %s: %w", sc.Name, p.Name(), err)
	}
	return out, nil
}

type simulator struct {
	sc    *Scenario
	cfg   SimConfig
	out   []Outcome
	queue queue
	// feasible is the queued work that can still start in time, per
	// level (NodeView.WaitMs).
	feasible *feasibleWork
	// Tasks in service: in the waking part of their CPU work, in the rest
	// of it, or in their I/O part, each ordered by the virtual time its
	// part ends (target, see node.go).
	inWake, inCPU, inIO indexHeap
	target              []float64
	node                *nodeModel
	now                 float64
	sig                 *signals
	view                NodeView
	workers             int
	// inFlight is the expected work (ms) decided and not finished at each
	// level: features 17 to 19.
	inFlight [policy.NumActions]float64
	// hold is what background work leaves free: the latest decision's
	// reserve (Reserver) and short limit (ShortServer), else the calm
	// quarter for every task.
	hold policy.Hold
	// fg is the foreground's recent load (policy.ForegroundLoad): what a
	// served policy sizes a contended reserve to.
	fg policy.ForegroundLoad
}

func newSimulator(sc *Scenario, cfg SimConfig, seed int64) *simulator {
	cal := cfg.Calibration
	if cal == nil {
		cal = DefaultCalibration()
	}
	s := &simulator{sc: sc, cfg: cfg, workers: sc.Workers, hold: policy.Hold{Share: policy.CalmReserve}}
	s.node = newNodeModel(sc, cal)
	s.sig = newSignals(sc, cal, s.node, seed, cfg.MissingSources, cfg.VaryNode)
	s.sig.eagerAccept = cfg.EagerAccept
	s.node.set(0, 0, 0, 0)
	return s
}

func (s *simulator) run(p Policy) error {
	next := 0
	cutoff := s.sc.DurationS * 1000
	for i := range s.out {
		cutoff = math.Max(cutoff, s.out[i].DeadlineMs())
	}
	for {
		// Completions before arrivals at the same instant: the freed worker
		// is then available to the arrival. An interference edge changes
		// only the speeds.
		tArr := math.Inf(1)
		if next < len(s.out) {
			tArr = s.out[next].ArrivalMs
		}
		tWake := s.nextEnd(&s.inWake, &s.node.wake)
		tCPU, tIO := s.nextEnd(&s.inCPU, &s.node.cpu), s.nextEnd(&s.inIO, &s.node.io)
		tFin := math.Min(tWake, math.Min(tCPU, tIO))
		tEdge := s.node.nextEdge(s.now)
		if math.IsInf(tArr, 1) && math.IsInf(tFin, 1) {
			break
		}
		if math.Min(tArr, math.Min(tFin, tEdge)) > cutoff {
			break
		}
		switch {
		case tEdge < tFin && tEdge < tArr:
			s.advance(tEdge)
		case tFin <= tArr && tWake <= tCPU && tWake <= tIO:
			s.advance(tWake)
			s.endWake(heap.Pop(&s.inWake).(int))
		case tFin <= tArr && tCPU <= tIO:
			s.advance(tCPU)
			s.endCPU(heap.Pop(&s.inCPU).(int))
		case tFin <= tArr:
			s.advance(tIO)
			s.finish(heap.Pop(&s.inIO).(int))
		default:
			s.advance(tArr)
			if err := s.arrive(next, p); err != nil {
				return err
			}
			next++
		}
		s.dispatch()
		s.node.set(s.inWake.Len(), s.inCPU.Len(), s.inIO.Len(), s.now)
	}
	s.advance(cutoff)
	for i := range s.out {
		if !s.out[i].Finished {
			s.out[i].FinishMs = math.Max(cutoff, s.out[i].ArrivalMs)
			s.out[i].Phase = s.sig.phase(cutoff / 1000)
			s.out[i].Reward = Reward(s.out[i].Phase, s.out[i].LatencyMs(), s.out[i].SLAMs, false, s.out[i].Weight, s.sig.util)
		}
	}
	if s.cfg.TrackBlame {
		assignBlame(s.out, cutoff)
	}
	return nil
}

// nextEnd is the wall time at which the first task of h ends its part.
func (s *simulator) nextEnd(h *indexHeap, c *vclock) float64 {
	if h.Len() == 0 {
		return math.Inf(1)
	}
	return c.wallAt(s.target[h.idx[0]], s.now)
}

func (s *simulator) advance(t float64) {
	s.node.advance(t - s.now)
	s.sig.advance(t)
	s.now = t
}

// busy is the number of workers serving a task.
func (s *simulator) busy() int { return s.inWake.Len() + s.inCPU.Len() + s.inIO.Len() }

func (s *simulator) arrive(i int, p Policy) error {
	o := &s.out[i]
	o.State = s.sig.state(o, s.queue.Len()+s.busy(), &s.inFlight, s.now)
	s.view.sim, s.view.Now, s.view.Workers, s.view.State = s, s.now, s.workers, o.State
	s.view.Slowdown = s.sig.slowdown.Value()
	if s.cfg.NoServiceTimes {
		s.view.Slowdown = math.NaN()
	}
	level, key, err := p.Assign(&o.Task, &s.view)
	if err != nil {
		return fmt.Errorf("task %d: %w", o.ID, err)
	}
	if level < 0 || level >= policy.NumActions {
		return fmt.Errorf("task %d: %w: %d", o.ID, ErrBadAction, level)
	}
	if math.IsNaN(key) {
		key = math.Inf(1)
	}
	o.Level, o.Key = level, key
	s.fg.Add(s.now, level, o.ExpectedMs, o.SLAMs)
	s.view.ForegroundWorkers = s.fg.Workers(s.now)
	s.view.ForegroundIdleMs = s.fg.IdleMs(s.now)
	s.view.ForegroundSLAMs = s.fg.TightestSLA(s.now)
	if r, ok := p.(Reserver); ok {
		s.hold.Share = r.Reserve(&s.view)
	}
	if r, ok := p.(ShortServer); ok {
		s.hold.ShortMs = r.ShortBackgroundMs(&s.view)
		s.hold.UrgentSLAMs = policy.UrgentBackgroundSLAMs(s.view.ForegroundSLAMs)
	}
	s.queue.push(i)
	s.feasible.queued(i, s.now)
	s.inFlight[level] += o.ExpectedMs
	if s.cfg.OnDecide != nil {
		s.cfg.OnDecide(o)
	}
	return nil
}

func (s *simulator) dispatch() {
	for s.busy() < s.workers && s.queue.Len() > 0 {
		idx := s.queue.pop(s.now, startGate(s.busy(), s.workers, s.hold))
		if idx < 0 {
			return
		}
		s.feasible.started(idx)
		o := &s.out[idx]
		o.StartMs, o.Started = s.now, true
		o.MarkStart(s.busy(), s.workers, s.hold)
		if s.cfg.TrackHarm {
			o.Harm = s.harmOf(o)
		}
		cpuMs := o.cpuMs()
		if credit := s.node.wakeCreditMs; cpuMs > 0 && credit > 0 {
			s.target[idx] = s.node.wake.now(s.now) + math.Min(cpuMs, credit)
			heap.Push(&s.inWake, idx)
			continue
		}
		if cpuMs > 0 {
			s.target[idx] = s.node.cpu.now(s.now) + cpuMs
			heap.Push(&s.inCPU, idx)
			continue
		}
		s.target[idx] = s.node.io.now(s.now) + o.CostMs
		heap.Push(&s.inIO, idx)
	}
}

// endWake moves a task from the waking part of its CPU work to the rest
// of it, or past its CPU part where the credit covered it.
func (s *simulator) endWake(idx int) {
	o := &s.out[idx]
	if rest := o.cpuMs() - s.node.wakeCreditMs; rest > 0 {
		s.target[idx] = s.node.cpu.now(s.now) + rest
		heap.Push(&s.inCPU, idx)
		return
	}
	s.endCPU(idx)
}

// endCPU moves a task from its CPU part to its I/O part, or finishes it.
func (s *simulator) endCPU(idx int) {
	o := &s.out[idx]
	ioMs := o.CostMs * o.IOShare
	if ioMs <= 0 {
		s.finish(idx)
		return
	}
	s.target[idx] = s.node.io.now(s.now) + ioMs
	heap.Push(&s.inIO, idx)
}

// harmOf prices what a task takes from the tasks it overtakes by starting
// now. The reference order is EDF: every queued task with an earlier
// deadline waits about cost/workers longer because this one went first.
// For each such task j it adds, in reward units of the phase,
//
//   - w_sla·weight_j·min(1, delay/slack_j) when j can still meet its SLA
//     (slack_j = deadline − now − expected cost > 0): the share of j's
//     chance the delay uses up; already-doomed tasks cost nothing, which is
//     exactly why overtaking them is right;
//   - w_lat·min(delay, room_j)/(2·SLA_j), the loss in j's latency_penalty,
//     where room_j is how far j still is from the penalty's 2·SLA cap.
//
// The latency part keeps the price symmetric with the task's own reward,
// which also gains from lower latency.
func (s *simulator) harmOf(o *Outcome) float64 {
	delay := o.CostMs / float64(s.workers)
	w := PhaseWeights[s.sig.phase(s.now/1000)]
	h := 0.0
	s.queue.each(func(j int) {
		q := &s.out[j]
		if q.DeadlineMs() >= o.DeadlineMs() {
			return // EDF would have served o first anyway
		}
		if slack := q.DeadlineMs() - s.now - q.ExpectedMs; slack > 0 {
			h += w.SLA * q.Weight * math.Min(1, delay/slack)
		}
		if room := 2*q.SLAMs - (s.now - q.ArrivalMs); room > 0 {
			h += w.Lat * math.Min(delay, room) / (2 * q.SLAMs)
		}
	})
	return h
}

func (s *simulator) finish(idx int) {
	o := &s.out[idx]
	o.FinishMs = s.now
	o.Finished = true
	s.inFlight[o.Level] -= o.ExpectedMs
	o.Met = o.FinishMs <= o.DeadlineMs()
	o.Phase = s.sig.phase(s.now / 1000)
	o.Util = s.sig.util
	o.Reward = Reward(o.Phase, o.LatencyMs(), o.SLAMs, o.Met, o.Weight, o.Util)
	s.sig.finished(o)
	if obs, ok := s.view.observer(); ok {
		obs.Finished(&o.Task, o.StartMs, s.now)
	}
	if s.cfg.OnFinish != nil {
		s.cfg.OnFinish(o)
	}
}

// NodeView is what a policy may look at when it assigns a task: the state
// vector the simulator synthesised for it, and for hand-written rules the
// queue itself.
type NodeView struct {
	sim     *simulator
	policy  Policy
	Now     float64
	Workers int
	// CPUs is the node's CPUs (Scenario.NodeCPUs): what a served policy
	// bounds the reserve of oversubscribed CPUs by once the foreground has
	// gone (policy.ReserveOnBusyCPUs), as the agent does with its --cpus.
	CPUs  int
	State policy.State
	// Slowdown is how much slower than described the node's recently
	// finished tasks ran (policy.SlowdownWindow; NaN until enough have):
	// what gates the background reserve a Reserver asks for.
	Slowdown float64
	// ForegroundWorkers is the foreground's recent load, the decision
	// being made included (policy.ForegroundLoad.Workers): what a served
	// policy sizes a contended reserve, and a large calm one, to
	// (policy.SizeReserve, policy.SizeCalmReserve).
	ForegroundWorkers float64
	// ForegroundIdleMs is how long before the decision being made the
	// latest foreground task arrived, that decision included
	// (policy.ForegroundLoad.IdleMs): what releases a calm reserve that
	// protects no one (policy.NoForegroundToProtect).
	ForegroundIdleMs float64
	// ForegroundSLAMs is the tightest SLA among the foreground's recent
	// tasks, the decision being made included
	// (policy.ForegroundLoad.TightestSLA; 0: none): what a served policy
	// lets short background work past its reserve by
	// (policy.ShortBackgroundMs).
	ForegroundSLAMs float64

	freeTimes []float64
}

// WaitMs estimates how long a task placed at level would wait to start:
// the expected work queued at that level or above that can still meet its
// deadline is water-filled onto the
// workers from the times they free up (idle ones at 0, busy ones when their
// task's expected cost runs out). The first worker left free after that
// takes the task.
func (v *NodeView) WaitMs(level int) float64 {
	// Only queued work that can still make its deadline counts: the
	// executor runs late work after all of it (see priorityQueue).
	q := v.sim.feasible.atOrAbove(level, v.Now)
	free := v.freeTimes[:0]
	for _, h := range [...]*indexHeap{&v.sim.inWake, &v.sim.inCPU, &v.sim.inIO} {
		for _, idx := range h.idx {
			o := &v.sim.out[idx]
			free = append(free, math.Max(0, o.StartMs+o.ExpectedMs-v.Now))
		}
	}
	for len(free) < v.Workers {
		free = append(free, 0)
	}
	slices.Sort(free)
	v.freeTimes = free
	// Raise a water level W over the sorted free times until the area
	// between them and W holds q.
	for k := 1; k <= len(free); k++ {
		next := math.Inf(1)
		if k < len(free) {
			next = free[k]
		}
		// With the first k workers under water, level W = (q + Σ f_i)/k.
		sum := 0.0
		for _, f := range free[:k] {
			sum += f
		}
		w := (q + sum) / float64(k)
		if w <= next {
			return w
		}
	}
	return free[len(free)-1]
}

// Busy is the number of workers serving a task.
func (v *NodeView) Busy() int { return v.sim.busy() }

// observer is the policy being simulated, when it watches its tasks start
// and finish (the adaptive controllers do).
func (v *NodeView) observer() (Observer, bool) {
	o, ok := v.policy.(Observer)
	return o, ok
}

// phaseHeap orders the indices of tasks in one part of their service by
// the virtual time that part ends (target), then by task ID.
func phaseHeap(target []float64, out []Outcome) indexHeap {
	return indexHeap{less: func(x, y int) bool {
		if target[x] != target[y] {
			return target[x] < target[y]
		}
		return out[x].ID < out[y].ID
	}}
}
