// Package e2e is `triage bench e2e`. Its executor (Run) is the upstream
// side: it replays a scenario's arrivals in (compressed) real time, really
// runs each task as CPU work on worker goroutines locked to OS threads, and
// serves its queue either FIFO or by the priorities a triage agent answers
// over QUIC, reporting every outcome back. Its metrics are
// train.Summarise's, so the numbers compare with `triage eval` on the same
// scenario. Bench runs the executor under FIFO, a hand-written rule and a
// real `triage agent` process side by side, and measures that process.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/train"
	"github.com/triage-agent/triage/wire"
)

// Agent is what the executor asks for priorities; *client.Client implements it.
type Agent interface {
	Decide(ctx context.Context, tasks []*wire.Task) (*wire.DecideResponse, error)
	ReportOutcomes(ctx context.Context, outcomes []*wire.Outcome) (int, error)
}

// ReserveAgent is an Agent that also says how many of the workers
// background work should leave free (*client.Client does, from the agent's
// answers and tables); the executor honours it, as an upstream that adopts
// the agent's reserve does.
type ReserveAgent interface {
	// BackgroundHold is the latest reserve share and, from the same
	// message, the expected cost up to which a background task may start
	// while the reserve holds more than the calm quarter
	// (policy.Hold.ShortMs) and the SLA up to which one that can still
	// meet it may start whatever the reserve holds
	// (policy.Hold.UrgentSLAMs); 0: none. ok is false until one came.
	BackgroundHold() (share, shortMs, urgentSLAMs float64, ok bool)
}

// Config configures one run; the zero value of each field means its default.
type Config struct {
	Scenario *train.Scenario
	// Seed of the arrivals; 0 uses the scenario's.
	Seed int64
	// TimeScale is wall seconds per scenario second: costs, arrival gaps and
	// the run's length are multiplied by it. 0 picks min(1, 25 s / duration),
	// so a run takes at most about half a minute.
	TimeScale float64
	// Agent, when set, decides each task's priority (the agent policy);
	// nil serves FIFO.
	Agent Agent
	// AnswerOrder orders the agent's answers within a priority (the zero
	// value: train.AdaptiveOrder, with the run's own slowdown).
	AnswerOrder train.AnswerOrder
	// Local decides each task from the agent's decision table where the
	// table answers, in the dispatcher, without a round trip (Agent must be
	// a LocalAgent); the rest go to the agent.
	Local bool
	// Rule, when set and Agent is not, decides each task's priority (and
	// its key within the level) at arrival inside the executor, with no
	// network: a baseline run on the same real workers as the agent. It
	// must not read the NodeView (the rules and controllers of
	// e2e.Baselines do not); a train.Observer is told of each start and
	// finish, as in the simulator.
	Rule train.Policy
	// Label names the policy in the results; default "agent", the rule's
	// name, or "fifo".
	Label string
	// DecideConcurrency is the number of decide calls in flight at once; default 32.
	DecideConcurrency int
	// ReportEvery is how often finished outcomes are sent; default 5ms.
	ReportEvery time.Duration
	// CPUTime makes a task's cost CPU time of its worker thread rather
	// than wall time (see burn).
	CPUTime bool
	// WorkerNice is the nice value of the worker threads; default 10, so
	// the agent and the executor's own dispatch preempt the spinning
	// workers at once, as a node gives its control plane priority over
	// batch work. -1 leaves them at the process's nice value.
	WorkerNice int
	// IDBase is added to task ids on the wire, so runs that share an agent
	// never reuse an id.
	IDBase uint64
	// IODir is where a format-v2 scenario's tasks do their I/O and its
	// neighbour writers write (default os.TempDir()): a directory on the
	// disk whose contention matters.
	IODir string
	// IOWriteMs is the I/O unit: the time of one uncontended 64 KiB write
	// and fsync that a task's I/O milliseconds are counted in. 0 measures
	// it at the start of the run (measureWrite); Bench measures it once
	// and gives every run the same, so that every policy's tasks do the
	// same writes.
	IOWriteMs float64
}

// Result is one run.
type Result struct {
	Label    string
	Outcomes []train.Outcome // in scenario units (ms of scenario time)
	Metrics  train.Metrics
	// DecideLatency is how long each task waited for its priority (wall
	// time): a local decision's lookup, a call's round trip (request out
	// to answer in); sorted; empty for FIFO. RemoteLatency is the calls'
	// alone, sorted.
	DecideLatency []time.Duration
	RemoteLatency []time.Duration
	// LocalDecisions and RemoteDecisions count the tasks decided from the
	// agent's table and by a call.
	LocalDecisions, RemoteDecisions int
	DecideErrors                    int
	ReportErrors                    int
	Wall                            time.Duration
	TimeScale                       float64
	// LateStarts counts arrivals the dispatcher released more than 2 ms
	// after their scheduled time (a busy machine; the numbers are then
	// less comparable).
	LateStarts int
	// HeldBackStarts counts the tasks started while the agent asked for
	// more than the calm reserve (policy.CalmReserve): how much of the run
	// the agent counted the node as contended (policy.Reserve): the
	// outcomes marked train.Outcome.HeldBack, which Metrics.PerPeriod also
	// splits by the period each task arrived in.
	HeldBackStarts int
	// ShortStarts counts the background tasks started on a worker the
	// agent's reserve held back, let through as short work beyond the calm
	// quarter (policy.Hold.ShortMs) or as urgent work (policy.Hold.UrgentSLAMs).
	ShortStarts int
	// IOWriteMs is the run's I/O unit (Config.IOWriteMs, or measured at
	// its start when that is 0), and DiskSettle how long the run waited
	// before it for the disk's writeback to drain (0 for a node without
	// I/O).
	IOWriteMs  float64
	DiskSettle time.Duration
}

// ErrNoScenario reports a Config without a scenario.
var ErrNoScenario = errors.New("e2e: no scenario")

type run struct {
	cfg    Config
	sc     *train.Scenario
	tasks  []train.Task
	scale  float64
	start  time.Time
	outs   []train.Outcome
	node   *node
	ruleMu sync.Mutex // serialises calls into cfg.Rule
	mu     sync.Mutex
	cond   *sync.Cond
	queue  *train.Queue // the executor contract; guarded by mu
	// slowdown is the run's finished tasks' service time over their
	// expected cost, overall and each class's pace against that (the
	// agent's answers' AdaptiveOrder reads it); guarded by mu.
	slowdown policy.Slowdowns
	busy     int // workers serving; guarded by mu
	closed   bool
	stop     atomic.Bool
	done     atomic.Int64 // finished tasks
	doneCh   chan struct{}
	report   chan *wire.Outcome
	res      Result
	errMu    sync.Mutex
	errs     []error
	cancel   context.CancelFunc // ends the run early, on a worker's error
}

// fifo is whether this run serves FIFO (no agent, no rule).
func (r *run) fifo() bool { return r.cfg.Agent == nil && r.cfg.Rule == nil }

// keyOrdered is whether the queue serves strictly by (level, key): FIFO
// and the whole-queue disciplines (EDF, SJF).
func (r *run) keyOrdered() bool {
	_, ok := r.cfg.Rule.(train.KeyOrdered)
	return r.fifo() || (r.cfg.Agent == nil && ok)
}

// observer is the rule when it watches its tasks start and finish.
func (r *run) observer() train.Observer {
	if r.cfg.Agent != nil {
		return nil
	}
	o, _ := r.cfg.Rule.(train.Observer)
	return o
}

func (r *run) nowMs() float64 { return float64(time.Since(r.start).Nanoseconds()) / 1e6 }

// Run replays cfg.Scenario once and returns its outcomes and metrics.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	sc := cfg.Scenario
	if sc == nil {
		return nil, ErrNoScenario
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = sc.Seed
	}
	scale := cfg.TimeScale
	if scale <= 0 {
		scale = math.Min(1, 25/sc.DurationS)
	}
	if cfg.DecideConcurrency <= 0 {
		cfg.DecideConcurrency = 32
	}
	if cfg.WorkerNice == 0 {
		cfg.WorkerNice = 10
	}
	if cfg.ReportEvery <= 0 {
		cfg.ReportEvery = 5 * time.Millisecond
	}
	if cfg.Label == "" {
		switch {
		case cfg.Agent != nil:
			cfg.Label = "agent"
		case cfg.Rule != nil:
			cfg.Label = cfg.Rule.Name()
		default:
			cfg.Label = "fifo"
		}
	}
	nd, err := newNode(sc, cfg.IODir, cfg.IOWriteMs)
	if err != nil {
		return nil, err
	}
	defer nd.close()
	if res, ok := cfg.Rule.(train.Resetter); ok && cfg.Agent == nil {
		res.Reset()
	}
	r := &run{cfg: cfg, sc: sc, tasks: sc.Arrivals(seed), scale: scale, node: nd, doneCh: make(chan struct{}), report: make(chan *wire.Outcome, 4096)}
	r.cond = sync.NewCond(&r.mu)
	r.outs = make([]train.Outcome, len(r.tasks))
	for i := range r.tasks {
		r.outs[i] = train.Outcome{Task: r.tasks[i]}
	}
	// The simulator's queue, in simulated milliseconds: FIFO (and EDF,
	// SJF) serve strictly by key; priorities get the whole contract
	// (levels, the order within a level by key: the rule's, or
	// Config.AnswerOrder for the agent's answers; the late-work rule, the
	// background tier).
	if cfg.Agent != nil {
		r.queue = train.NewAnswerQueue(&r.outs, cfg.AnswerOrder, sc.Workers, &r.slowdown)
	} else {
		r.queue = train.NewQueue(&r.outs, r.keyOrdered())
	}
	r.res = Result{Label: cfg.Label, TimeScale: scale, IOWriteMs: nd.writeMs, DiskSettle: nd.settled}
	if len(r.tasks) == 0 {
		r.res.Metrics = train.Summarise(sc, r.outs)
		return &r.res, nil
	}

	cutoffMs := sc.DurationS * 1000
	for i := range r.tasks {
		cutoffMs = math.Max(cutoffMs, r.tasks[i].DeadlineMs())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.cancel = cancel

	// A spinning worker holds a Go P for as long as it runs: give the
	// process enough Ps that the workers never starve the dispatcher, the
	// client and the reporter; the kernel then schedules the threads (the
	// workers niced below the rest).
	prevProcs := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(max(prevProcs, sc.Workers+runtime.NumCPU()+2))
	defer runtime.GOMAXPROCS(prevProcs)

	r.start = time.Now()
	stopNeighbours := make(chan struct{})
	neighbours := make(chan error, 1)
	go func() { neighbours <- nd.play(sc, scale, max(cfg.WorkerNice, 0), r.start, stopNeighbours) }()
	var wg sync.WaitGroup
	for w := 0; w < sc.Workers; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); r.worker() }()
	}
	var reporterWG sync.WaitGroup
	if cfg.Agent != nil {
		reporterWG.Add(1)
		go func() { defer reporterWG.Done(); r.reporter(ctx) }()
	}
	lat := r.dispatch(ctx)

	// End at the scenario's cutoff (as the simulator does) or when every
	// task has finished, whichever is first.
	cutoff := time.Until(r.start.Add(time.Duration(cutoffMs * scale * float64(time.Millisecond))))
	select {
	case <-r.doneCh:
	case <-time.After(cutoff):
	case <-ctx.Done():
	}
	r.stop.Store(true)
	close(stopNeighbours)
	r.mu.Lock()
	r.closed = true
	r.cond.Broadcast()
	r.mu.Unlock()
	wg.Wait()
	close(r.report)
	reporterWG.Wait()
	r.res.Wall = time.Since(r.start)
	if err := errors.Join(r.workerErr(), <-neighbours); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	util := float64(r.busy) / float64(sc.Workers) // workers have stopped: no lock needed
	for i := range r.outs {
		o := &r.outs[i]
		if o.HeldBack {
			r.res.HeldBackStarts++
		}
		if !o.Finished {
			o.FinishMs = math.Max(cutoffMs, o.ArrivalMs)
			o.Phase = phaseAt(sc, cutoffMs/1000)
			o.Reward = train.Reward(o.Phase, o.LatencyMs(), o.SLAMs, false, o.Weight, util)
		}
	}
	r.res.ShortStarts = train.ShortStarts(r.outs)
	slices.Sort(lat)
	slices.Sort(r.res.RemoteLatency)
	r.res.DecideLatency = lat
	r.res.Outcomes = r.outs
	r.res.Metrics = train.Summarise(sc, r.outs)
	return &r.res, nil
}

func phaseAt(sc *train.Scenario, tSec float64) train.Phase {
	if sc.LoadAt(tSec) > 1 || sc.Arrival.InBurst(tSec) {
		return train.PhasePeak
	}
	return train.PhaseSteady
}

// dispatch releases each arrival at its (scaled) time: straight into the
// queue for FIFO, through a decide call for the agent. It returns the
// decide latencies once every arrival has been placed.
func (r *run) dispatch(ctx context.Context) []time.Duration {
	var dec *decider
	if r.cfg.Agent != nil {
		dec = r.newDecider(ctx)
	}
	for i := range r.tasks {
		at := r.start.Add(time.Duration(r.tasks[i].ArrivalMs * r.scale * float64(time.Millisecond)))
		if ctx.Err() != nil {
			break
		}
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		} else if d < -2*time.Millisecond {
			r.res.LateStarts++
		}
		switch {
		case dec != nil:
			dec.place(i)
		case r.cfg.Rule != nil:
			level, key := r.ruleLevel(i)
			r.enqueue(i, level, key)
		default:
			r.enqueue(i, 0, r.tasks[i].ArrivalMs)
		}
	}
	if dec == nil {
		return nil
	}
	return dec.finish()
}

func (r *run) enqueue(i, level int, key float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	o := &r.outs[i]
	o.Level, o.Key = level, key
	if math.IsNaN(key) {
		o.Key = math.Inf(1)
	}
	r.queue.Push(i)
	r.cond.Signal()
}

// ruleLevel asks cfg.Rule for task i's priority and key; an error or an
// out-of-range answer serves it at the lowest level, as for the agent.
func (r *run) ruleLevel(i int) (int, float64) {
	r.ruleMu.Lock()
	level, key, err := r.cfg.Rule.Assign(&r.tasks[i], &train.NodeView{})
	r.ruleMu.Unlock()
	if err != nil || level < 0 || level > 4 {
		r.res.DecideErrors++
		return 0, r.tasks[i].DeadlineMs()
	}
	return level, key
}

// simNowMs is the run's clock in simulated milliseconds, the queue's unit.
func (r *run) simNowMs() float64 { return r.nowMs() / r.scale }

// next blocks until a task may start and returns it, or -1 when the run
// is closed. A worker that finds only held-back background work waits for
// a finish or an arrival to change that.
func (r *run) next() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for !r.closed {
		now := r.simNowMs()
		hold := r.currentHold()
		if i := r.queue.Pop(now, r.busy, r.sc.Workers, hold); i >= 0 {
			r.outs[i].MarkStart(r.busy, r.sc.Workers, hold)
			r.busy++
			return i
		}
		r.cond.Wait()
	}
	return -1
}

// currentHold is what background work leaves free: the agent's latest
// reserve, short and urgent limits where it sends them, else the calm
// quarter for every task (FIFO, the in-process rules, an agent that has
// sent none yet).
func (r *run) currentHold() policy.Hold {
	if ra, ok := r.cfg.Agent.(ReserveAgent); ok {
		if share, short, urgent, ok := ra.BackgroundHold(); ok {
			return policy.Hold{Share: share, ShortMs: short, UrgentSLAMs: urgent}
		}
	}
	return policy.Hold{Share: policy.CalmReserve}
}

// finished frees the worker, counts the task's service time (scenario
// ms; 0 for one the run cut short) against its expected cost in the
// slowdowns (the node's, and its class's pace), and returns how many workers
// were busy with it. No other worker needs waking: one finish frees one
// slot, and the worker that freed it asks next() at once, so it takes
// whatever may now start, a held-back background task included.
func (r *run) finished(class int, serviceMs, expectedMs float64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	busy := r.busy
	r.busy--
	r.slowdown.Add(class, serviceMs, expectedMs)
	return busy
}

// worker serves the queue on its own OS thread until the run stops.
func (r *run) worker() {
	runtime.LockOSThread()
	// The thread is niced (and pinned) for good: it exits with the
	// goroutine rather than going back to the pool.
	if n := r.cfg.WorkerNice; n > 0 {
		_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), n)
	}
	if err := r.node.pin(); err != nil {
		r.fail(fmt.Errorf("e2e: pinning a worker to the node's CPUs: %w", err))
		return
	}
	var file *taskFile
	if r.node.dir != "" {
		var err error
		if file, err = newTaskFile(r.node.dir); err != nil {
			r.fail(err)
			return
		}
		defer file.close()
	}
	for {
		idx := r.next()
		if idx < 0 {
			return
		}
		o := &r.outs[idx]
		startMs := r.nowMs()
		ok, err := r.serve(o, file)
		finMs := r.nowMs()
		serviceMs := 0.0
		if ok && err == nil {
			serviceMs = (finMs - startMs) / r.scale
		}
		busy := r.finished(o.Class, serviceMs, o.ExpectedMs)
		if err != nil {
			r.fail(err)
			return
		}
		if !ok {
			continue // the run ended mid-task: it stays unfinished; the loop sees closed
		}
		o.StartMs, o.FinishMs, o.Started = startMs/r.scale, finMs/r.scale, true
		o.Finished = true
		o.Met = o.FinishMs <= o.DeadlineMs()
		o.Phase = phaseAt(r.sc, o.FinishMs/1000)
		o.Util = float64(busy) / float64(r.sc.Workers)
		o.Reward = train.Reward(o.Phase, o.LatencyMs(), o.SLAMs, o.Met, o.Weight, o.Util)
		if obs := r.observer(); obs != nil {
			r.ruleMu.Lock()
			obs.Finished(&r.tasks[idx], o.StartMs, o.FinishMs)
			r.ruleMu.Unlock()
		}
		if r.cfg.Agent != nil {
			r.report <- &wire.Outcome{Id: r.cfg.IDBase + uint64(idx) + 1, LatencyMs: float32(o.LatencyMs()), SlaMet: o.Met, ServiceMs: float32(serviceMs)}
		}
		if r.done.Add(1) == int64(len(r.tasks)) {
			close(r.doneCh)
		}
	}
}

// serve runs task o on the calling worker thread: its cost as CPU work
// (v1: wall or CPU time, Config.CPUTime), or on a format-v2 node its CPU
// part as CPU time and its I/O part as fsync'd writes. It returns false
// when the run stopped first.
func (r *run) serve(o *train.Outcome, file *taskFile) (bool, error) {
	ms := func(x float64) time.Duration { return time.Duration(x * r.scale * float64(time.Millisecond)) }
	if !r.sc.HasNode() {
		return burn(ms(o.CostMs), r.cfg.CPUTime, &r.stop), nil
	}
	if !burn(ms(o.CostMs*(1-o.IOShare)), true, &r.stop) {
		return false, nil
	}
	for n := r.node.writes(o.CostMs * o.IOShare * r.scale); n > 0; n-- {
		if r.stop.Load() {
			return false, nil
		}
		if err := file.write(); err != nil {
			return false, err
		}
	}
	return true, nil
}

// fail records a worker's error and stops the run.
func (r *run) fail(err error) {
	r.errMu.Lock()
	r.errs = append(r.errs, err)
	r.errMu.Unlock()
	r.cancel()
}

func (r *run) workerErr() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return errors.Join(r.errs...)
}

// reporter sends finished outcomes to the agent in small batches.
func (r *run) reporter(ctx context.Context) {
	t := time.NewTicker(r.cfg.ReportEvery)
	defer t.Stop()
	var batch []*wire.Outcome
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if _, err := r.cfg.Agent.ReportOutcomes(ctx, batch); err != nil {
			r.res.ReportErrors++
		}
		batch = batch[:0]
	}
	for {
		select {
		case o, ok := <-r.report:
			if !ok {
				flush()
				return
			}
			batch = append(batch, o)
			if len(batch) >= 256 {
				flush()
			}
		case <-t.C:
			flush()
		}
	}
}

func (r *Result) String() string {
	s := fmt.Sprintf("%s: %d tasks, SLA %.4f, goodput %.2f/s, p50 %.1f ms, p99 %.1f ms (wall %v, scale %.3f)",
		r.Label, r.Metrics.Tasks, r.Metrics.SLAAttainment, r.Metrics.GoodputPerS, r.Metrics.P50Ms, r.Metrics.P99Ms, r.Wall.Round(time.Millisecond), r.TimeScale)
	if r.IOWriteMs > 0 {
		s += fmt.Sprintf(", I/O unit %.3f ms after %v of disk settling", r.IOWriteMs, r.DiskSettle.Round(time.Millisecond))
	}
	return s
}
