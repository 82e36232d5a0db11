package soak

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/wire"
)

// deciders are the upstream: Clients connections that together offer
// Rate tasks a second and report an outcome for every decision. The load
// is open loop: each client sends its calls on a fixed schedule (the
// clients staggered across one interval), whether or not its earlier
// calls have been answered, with up to MaxInFlight calls in flight. A call
// the schedule asks for while MaxInFlight are in flight is not sent and
// is counted (unsent): a slow agent then shows as achieved below offered,
// never as a generator that waits for answers and offers less than Rate
// (a closed loop of one call at a time reaches only 1/round trip per
// client: 16 clients at a 7 ms round trip are 2,300 tasks a second).
// Outcomes go in reports of OutcomeBatch decisions, sent by one reporter
// per client beside its calls (more decisions per report while the
// previous report is in flight).
//
// Task ids are client<<idClientShift | sequence, so that the log's ids
// say which client's acknowledgement they answer.
type deciders struct {
	decisions, errors, acked, outcomeErrors atomic.Int64
	sent, unsent                            atomic.Int64 // tasks
	ackedIDs                                []*idSet     // per client
	wg                                      sync.WaitGroup
}

const idClientShift = 40

// maxReportOutcomes is the most outcomes in one report: the agent's batch
// limit (serve.Config.MaxBatch's default).
const maxReportOutcomes = 1024

func clientConfig(ap *agentProc) client.Config {
	return client.Config{PinSHA256: ap.Fingerprint, ServerName: "localhost", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// decider is one client connection's state.
type decider struct {
	cl    *client.Client
	who   uint64
	acked *idSet

	mu      sync.Mutex
	pending []*wire.Outcome // decided, not yet reported
	wake    chan struct{}   // a report is due (capacity 1)
}

func startDeciders(ctx context.Context, ap *agentProc, cfg Config, lat *latencyHist, measureFrom time.Time) (*deciders, error) {
	ds := &deciders{}
	// Each client's share of the calls, paced at its own interval.
	interval := time.Duration(float64(time.Second) * float64(cfg.Clients*cfg.Batch) / float64(cfg.Rate))
	var clients []*decider
	for i := range cfg.Clients {
		cl, err := client.Dial(ctx, ap.QUICAddr, clientConfig(ap))
		if err != nil {
			for _, d := range clients {
				d.cl.Close()
			}
			return nil, fmt.Errorf("connecting decider %d: %w", i, err)
		}
		d := &decider{cl: cl, who: uint64(i), acked: &idSet{}, wake: make(chan struct{}, 1)}
		clients = append(clients, d)
		ds.ackedIDs = append(ds.ackedIDs, d.acked)
	}
	first := time.Now()
	for i, d := range clients {
		offset := interval * time.Duration(i) / time.Duration(cfg.Clients)
		ds.wg.Add(1)
		go func() {
			defer ds.wg.Done()
			defer d.cl.Close()
			ds.run(ctx, d, first.Add(offset), interval, cfg, lat, measureFrom)
		}()
	}
	return ds, nil
}

func (ds *deciders) wait() { ds.wg.Wait() }

// run sends d's calls on the schedule first + k*interval until ctx ends,
// waits for the calls in flight, and reports the last outcomes.
func (ds *deciders) run(ctx context.Context, d *decider, first time.Time, interval time.Duration, cfg Config, lat *latencyHist, measureFrom time.Time) {
	var calls sync.WaitGroup
	done := make(chan struct{})
	reported := make(chan struct{})
	go func() { defer close(reported); ds.reportLoop(d, cfg, done) }()

	slots := make(chan struct{}, cfg.MaxInFlight)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	var seq uint64
	for k := 0; ctx.Err() == nil; k++ {
		// A schedule, not a ticker: after a pause the calls that fell due
		// go at once (bounded by MaxInFlight) instead of being dropped.
		if wait := time.Until(first.Add(time.Duration(k) * interval)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				continue
			case <-timer.C:
			}
		}
		select {
		case slots <- struct{}{}:
		default:
			ds.unsent.Add(int64(cfg.Batch))
			continue
		}
		tasks := newTasks(d.who, &seq, cfg.Batch)
		ds.sent.Add(int64(len(tasks)))
		calls.Add(1)
		go func() {
			defer calls.Done()
			defer func() { <-slots }()
			ds.call(ctx, d, tasks, cfg, lat, measureFrom)
		}()
	}
	calls.Wait()
	close(done)
	<-reported
}

// soakClasses are the deciders' task classes, one SLA each.
var soakClasses = [...]struct {
	name string
	sla  float32
}{{"realtime-check", 20}, {"scoring", 200}, {"batch-infer", 2000}}

func newTasks(who uint64, seq *uint64, n int) []*wire.Task {
	tasks := make([]*wire.Task, n)
	for k := range tasks {
		c := soakClasses[*seq%uint64(len(soakClasses))]
		tasks[k] = &wire.Task{Id: who<<idClientShift | *seq, Class: c.name, SlaMs: c.sla, CostMs: c.sla / 10}
		*seq++
	}
	return tasks
}

// call decides tasks and queues an outcome for every decision.
func (ds *deciders) call(ctx context.Context, d *decider, tasks []*wire.Task, cfg Config, lat *latencyHist, measureFrom time.Time) {
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	resp, err := d.cl.Decide(cctx, tasks)
	cancel()
	took := time.Since(start)
	if err != nil {
		if ctx.Err() == nil {
			ds.errors.Add(1)
		}
		return
	}
	if start.After(measureFrom) {
		lat.observe(took)
	}
	ds.decisions.Add(int64(len(resp.GetDecisions())))
	d.mu.Lock()
	for _, dec := range resp.GetDecisions() {
		d.pending = append(d.pending, &wire.Outcome{Id: dec.GetId(), LatencyMs: 3, ServiceMs: 2, SlaMet: true})
	}
	due := len(d.pending) >= cfg.OutcomeBatch*cfg.Batch
	d.mu.Unlock()
	if due {
		select {
		case d.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// reportLoop sends d's outcomes whenever OutcomeBatch decisions' worth
// are pending, one report at a time, and all that are left once done is
// closed (after the last call).
func (ds *deciders) reportLoop(d *decider, cfg Config, done <-chan struct{}) {
	batch := cfg.OutcomeBatch * cfg.Batch
	for {
		final := false
		select {
		case <-d.wake:
		case <-done:
			final = true
		}
		for {
			outs := d.take(batch, final)
			if outs == nil {
				break
			}
			ds.report(d, outs)
		}
		if final {
			return
		}
	}
}

// take removes up to maxReportOutcomes pending outcomes when at least
// least are pending (any when all is set), or returns nil.
func (d *decider) take(least int, all bool) []*wire.Outcome {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.pending)
	if n == 0 || (n < least && !all) {
		return nil
	}
	n = min(n, maxReportOutcomes)
	outs := slices.Clone(d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return outs
}

// report sends one report (whatever the run's context: an outcome of a
// decision made is reported even as the run ends) and records what the
// agent acknowledged.
func (ds *deciders) report(d *decider, outs []*wire.Outcome) {
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	n, err := d.cl.ReportOutcomes(rctx, outs)
	cancel()
	if err != nil {
		ds.outcomeErrors.Add(1)
		return
	}
	ds.acked.Add(int64(n))
	for _, o := range outs[:n] {
		d.acked.add(o.GetId() & (1<<idClientShift - 1))
	}
}

// idSet is a set of sequence numbers, a bit each.
type idSet struct {
	mu   sync.Mutex
	bits []uint64
}

func (s *idSet) add(seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := int(seq / 64)
	if w >= len(s.bits) {
		s.bits = append(s.bits, make([]uint64, w+1-len(s.bits))...)
	}
	s.bits[w] |= 1 << (seq % 64)
}

func (s *idSet) has(seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := int(seq / 64)
	return w < len(s.bits) && s.bits[w]&(1<<(seq%64)) != 0
}

// each calls f for every member, in order.
func (s *idSet) each(f func(uint64)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w, b := range s.bits {
		for b != 0 {
			i := uint64(0)
			for b&(1<<i) == 0 {
				i++
			}
			f(uint64(w)*64 + i)
			b &^= 1 << i
		}
	}
}
