package client

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-agent/triage/wire"
)

// Local decisions (docs/local-decisions.md). With Config.LocalDecisions the
// client subscribes to the agent's decision tables and answers a task from
// the current table when the table is fresh enough (Config.MaxStaleness)
// and has a cell for it; every other task goes to the agent. Local
// decisions are reported to the agent in batches (Config.LocalReportEvery),
// each with the table's epoch and the cell it was decided from, so the
// agent counts them in its queue and logs them with their outcomes; the
// reports of a batch reach the agent before any outcome reported after it.

// localReportBatch is the most local decisions sent in one report (the
// agent's default batch limit is 1024).
const localReportBatch = 512

// queueCounts are the client's running counts behind its estimate of the
// agent's queue between two tables: the table says how many tasks the
// agent tracked; since then this client decided more and reported some
// outcomes.
type queueCounts struct {
	reported int64 // local decisions the agent has taken
	remote   int64 // tasks decided by a call to the agent
	outAcked int64 // outcomes the agent has taken
}

// pendingLocal is a local decision waiting to be reported: the task's
// fields (its strings shared, not copied) and what it was decided from.
type pendingLocal struct {
	id                    uint64
	taskID, class, tenant string
	slaMs, costMs         float32
	priority              uint32
	cell                  uint32
	epoch                 uint64
	at                    time.Time
}

type localDecider struct {
	c     *Client
	table atomic.Pointer[localTable]

	decided, reported, remote, outcomes, outAcked atomic.Int64

	stats     localCounters
	staleness durationHist

	mu      sync.Mutex
	pending []pendingLocal
	spare   []pendingLocal
	kick    chan struct{}
	// flushing holds a token while a report is in flight: a flush waits
	// for the one before (whose decisions an outcome may name), but no
	// longer than its context.
	flushing chan struct{}
}

type localCounters struct {
	local, stale, noTable, notInTable              atomic.Int64
	reportErrors, tables, badTables                atomic.Int64
	fullFrames, deltaFrames, fullBytes, deltaBytes atomic.Int64
	unsupported                                    atomic.Bool
}

func newLocalDecider(c *Client) *localDecider {
	return &localDecider{c: c, kick: make(chan struct{}, 1), flushing: make(chan struct{}, 1)}
}

// LocalStats is what the client's local decisions did so far.
type LocalStats struct {
	// Local counts tasks decided from a table; Remote tasks decided by a
	// call to the agent (every task when local decisions are off).
	Local, Remote int64
	// Why tasks were not decided locally: the table was older than
	// MaxStaleness, there was no table (none yet, or the subscription
	// broke), or the table had no cell for the task.
	Stale, NoTable, NotInTable int64
	// Reported counts local decisions the agent took; ReportErrors those
	// whose report failed (the agent does not count them).
	Reported, ReportErrors int64
	// Tables counts tables received, BadTables those refused (a table that
	// breaks its geometry is never decided from).
	Tables, BadTables int64
	// Table frames on the wire, full and delta (codec kinds), and their
	// bytes.
	FullFrames, DeltaFrames, FullBytes, DeltaBytes int64
	// Unsupported is set when the agent publishes no tables (an older
	// agent): every task goes to it.
	Unsupported bool
	// StalenessP50 and StalenessP99 are the age of the table at the local
	// decisions (to 19%: histogram buckets).
	StalenessP50, StalenessP99 time.Duration
}

// LocalStats returns the counts of local and remote decisions.
func (c *Client) LocalStats() LocalStats {
	l := c.local
	if l == nil {
		return LocalStats{Remote: c.remoteTasks.Load()}
	}
	s := &l.stats
	return LocalStats{
		Local: s.local.Load(), Remote: c.remoteTasks.Load(),
		Stale: s.stale.Load(), NoTable: s.noTable.Load(), NotInTable: s.notInTable.Load(),
		Reported: l.reported.Load() - s.reportErrors.Load(), ReportErrors: s.reportErrors.Load(),
		Tables: s.tables.Load(), BadTables: s.badTables.Load(),
		FullFrames: s.fullFrames.Load(), DeltaFrames: s.deltaFrames.Load(), FullBytes: s.fullBytes.Load(), DeltaBytes: s.deltaBytes.Load(),
		Unsupported:  s.unsupported.Load(),
		StalenessP50: l.staleness.quantile(0.5), StalenessP99: l.staleness.quantile(0.99),
	}
}

// DecideLocal decides t from the current decision table, without a round
// trip, and queues the decision's report. ok is false when it cannot: local
// decisions are off, there is no table or it is older than MaxStaleness,
// the table has no cell for t, or t's id is bad; the caller then calls
// Decide. A priority returned is always 0..4. It allocates nothing.
func (c *Client) DecideLocal(t *wire.Task) (priority uint32, ok bool) {
	l := c.local
	if l == nil || wire.CheckTaskID(t) != nil {
		return 0, false
	}
	now := time.Now()
	tb, ok := l.fresh(now, 1)
	if !ok {
		return 0, false
	}
	level, cell, ok := tb.lookup(t, l.queue(tb))
	if !ok {
		l.stats.notInTable.Add(1)
		return 0, false
	}
	l.commit(t, tb, level, cell, now)
	return level, true
}

// fresh is the current table when it is young enough to decide n tasks
// from.
func (l *localDecider) fresh(now time.Time, n int) (*localTable, bool) {
	tb := l.table.Load()
	if tb == nil {
		l.stats.noTable.Add(int64(n))
		return nil, false
	}
	if tb.age(now) > l.c.cfg.MaxStaleness {
		l.stats.stale.Add(int64(n))
		return nil, false
	}
	return tb, true
}

// decideFromTable is Decide's answer from the current table when it
// answers every task, else nil (nothing is then recorded: the call goes to
// the agent whole). Every task of a call sees the same queue, as in the
// agent.
func (c *Client) decideFromTable(tasks []*wire.Task) *wire.DecideResponse {
	l := c.local
	if l == nil || len(tasks) == 0 {
		return nil
	}
	now := time.Now()
	tb, ok := l.fresh(now, len(tasks))
	if !ok {
		return nil
	}
	q := l.queue(tb)
	msgs := make([]wire.Decision, len(tasks))
	cells := make([]uint32, len(tasks))
	for i, t := range tasks {
		level, cell, ok := tb.lookup(t, q)
		if !ok {
			l.stats.notInTable.Add(int64(len(tasks)))
			return nil
		}
		msgs[i].Id, msgs[i].TaskId, msgs[i].Priority, cells[i] = t.GetId(), t.GetTaskId(), level, cell
	}
	resp := &wire.DecideResponse{Decisions: make([]*wire.Decision, len(tasks)), Model: tb.model, StateEpoch: tb.stateEpoch}
	for i, t := range tasks {
		l.commit(t, tb, msgs[i].Priority, cells[i], now)
		resp.Decisions[i] = &msgs[i]
	}
	return resp
}

// queue is the client's estimate of the tasks the agent tracks now: the
// table's count, plus what this client decided since that the table does
// not count, less the outcomes it reported since.
func (l *localDecider) queue(tb *localTable) float32 {
	q := int64(tb.queueLen) + (l.decided.Load() - tb.base.reported) + (l.remote.Load() - tb.base.remote) - (l.outcomes.Load() - tb.base.outAcked)
	return float32(max(q, 0))
}

// commit records a local decision for the next report.
func (l *localDecider) commit(t *wire.Task, tb *localTable, level, cell uint32, now time.Time) {
	l.staleness.add(tb.age(now))
	l.mu.Lock()
	l.pending = append(l.pending, pendingLocal{
		id: t.GetId(), taskID: t.GetTaskId(), class: t.GetClass(), tenant: t.GetTenant(), slaMs: t.GetSlaMs(), costMs: t.GetCostMs(),
		priority: level, cell: cell, epoch: tb.epoch, at: now,
	})
	full := len(l.pending) >= localReportBatch
	l.mu.Unlock()
	l.decided.Add(1)
	l.stats.local.Add(1)
	if full {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// runReports sends the queued local decisions every c.cfg.LocalReportEvery
// (sooner when a batch is full) until ctx ends.
func (l *localDecider) runReports(ctx context.Context) {
	t := time.NewTicker(l.c.cfg.LocalReportEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-l.kick:
		}
		l.flush(ctx)
	}
}

// flush reports every local decision queued before it was called; when it
// returns, the agent has taken them, or their report failed, or ctx ended.
func (l *localDecider) flush(ctx context.Context) { l.flushWith(ctx, l.c.call) }

// flushOn is flush on session s alone (Close, when the client no longer
// hands out sessions). It gives up at once when a report is in flight.
func (l *localDecider) flushOn(ctx context.Context, s *session) {
	select {
	case l.flushing <- struct{}{}:
	default:
		return
	}
	defer func() { <-l.flushing }()
	l.sendPending(ctx, s.roundTrip)
}

// caller sends one request and returns its answer.
type caller func(ctx context.Context, req *wire.Envelope, id uint64) (*wire.Envelope, error)

func (l *localDecider) flushWith(ctx context.Context, send caller) {
	select {
	case l.flushing <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-l.flushing }()
	l.sendPending(ctx, send)
}

// sendPending reports what is queued; the caller holds the token. Two
// buffers swap: decisions queue into one while the other is sent (only
// the token's holder touches spare).
func (l *localDecider) sendPending(ctx context.Context, send caller) {
	l.mu.Lock()
	batch := l.pending
	l.pending, l.spare = l.spare[:0], nil
	l.mu.Unlock()
	for rest := batch; len(rest) > 0; {
		n := min(len(rest), localReportBatch)
		l.report(ctx, rest[:n], send)
		rest = rest[n:]
	}
	clear(batch) // drop the strings it shares
	l.spare = batch[:0]
}

// report sends one batch. A batch whose report fails is counted as taken
// all the same: the agent never counts it, and the queue estimate must not
// wait for it.
func (l *localDecider) report(ctx context.Context, batch []pendingLocal, send caller) {
	now := time.Now()
	ds := make([]*wire.LocalDecision, len(batch))
	tasks := make([]wire.Task, len(batch)) // one allocation for the batch's tasks
	for i := range batch {
		p := &batch[i]
		tasks[i] = wire.Task{Id: p.id, TaskId: p.taskID, Class: p.class, SlaMs: p.slaMs, CostMs: p.costMs, Tenant: p.tenant}
		age := now.Sub(p.at).Microseconds()
		ds[i] = &wire.LocalDecision{Task: &tasks[i], Priority: p.priority, TableEpoch: p.epoch, Cell: p.cell, AgeUs: uint32(min(max(age, 0), 1<<32-1))}
	}
	id := l.c.reqID.Add(1)
	req := &wire.Envelope{Body: &wire.Envelope_LocalReport{LocalReport: &wire.LocalReport{ReqId: id, Decisions: ds}}}
	env, err := send(ctx, req, id)
	if err == nil && env.GetLocalAccepted() == nil {
		err = fmt.Errorf("local report answered with %T", env.GetBody())
		if e := env.GetError(); e != nil {
			err = serverError(e)
		}
	}
	if err != nil {
		l.stats.reportErrors.Add(int64(len(batch)))
		l.c.cfg.Logger.Debug("local decisions not reported", "decisions", len(batch), "err", err)
	}
	l.reported.Add(int64(len(batch)))
}
