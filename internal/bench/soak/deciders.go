package soak

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/wire"
)

// deciders are the upstream: Clients connections that together decide
// Rate tasks a second, paced, and report an outcome for every decision.
// Task ids are client<<idClientShift | sequence, so that the log's ids
// say which client's acknowledgement they answer.
type deciders struct {
	decisions, errors, acked, outcomeErrors atomic.Int64
	ackedIDs                                []*idSet // per client
	wg                                      sync.WaitGroup
}

const idClientShift = 40

func clientConfig(ap *agentProc) client.Config {
	return client.Config{PinSHA256: ap.Fingerprint, ServerName: "localhost", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func startDeciders(ctx context.Context, ap *agentProc, cfg Config, lat *latencyHist, measureFrom time.Time) (*deciders, error) {
	ds := &deciders{}
	// Each client's share of the calls, paced at its own interval.
	interval := time.Duration(float64(time.Second) * float64(cfg.Clients*cfg.Batch) / float64(cfg.Rate))
	for i := range cfg.Clients {
		cl, err := client.Dial(ctx, ap.QUICAddr, clientConfig(ap))
		if err != nil {
			return nil, fmt.Errorf("connecting decider %d: %w", i, err)
		}
		ids := &idSet{}
		ds.ackedIDs = append(ds.ackedIDs, ids)
		ds.wg.Add(1)
		go func() {
			defer ds.wg.Done()
			defer cl.Close()
			ds.run(ctx, cl, uint64(i), ids, interval, cfg, lat, measureFrom)
		}()
	}
	return ds, nil
}

func (ds *deciders) wait() { ds.wg.Wait() }

func (ds *deciders) run(ctx context.Context, cl *client.Client, who uint64, acked *idSet, interval time.Duration, cfg Config, lat *latencyHist, measureFrom time.Time) {
	classes := []string{"realtime-check", "scoring", "batch-infer"}
	slas := []float32{20, 200, 2000}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var seq uint64
	pending := make([]*wire.Outcome, 0, cfg.OutcomeBatch*cfg.Batch)
	report := func() {
		if len(pending) == 0 {
			return
		}
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n, err := cl.ReportOutcomes(rctx, pending)
		cancel()
		if err != nil {
			ds.outcomeErrors.Add(1)
		} else {
			ds.acked.Add(int64(n))
			for _, o := range pending[:n] {
				acked.add(o.GetId() & (1<<idClientShift - 1))
			}
		}
		pending = pending[:0]
	}
	defer report()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		tasks := make([]*wire.Task, cfg.Batch)
		for k := range tasks {
			c := int(seq % 3)
			tasks[k] = &wire.Task{Id: who<<idClientShift | seq, Class: classes[c], SlaMs: slas[c], CostMs: slas[c] / 10}
			seq++
		}
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := cl.Decide(cctx, tasks)
		cancel()
		took := time.Since(start)
		if err != nil {
			if ctx.Err() == nil {
				ds.errors.Add(1)
			}
			continue
		}
		if start.After(measureFrom) {
			lat.observe(took)
		}
		ds.decisions.Add(int64(len(resp.GetDecisions())))
		for _, d := range resp.GetDecisions() {
			pending = append(pending, &wire.Outcome{Id: d.GetId(), LatencyMs: 3, ServiceMs: 2, SlaMet: true})
		}
		if len(pending) >= cfg.OutcomeBatch*cfg.Batch {
			report()
		}
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
