package agent

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/wire"
)

// streamer is an upstream that the fault tests run beside a fault: it
// decides batches of tasks and reports an outcome for each decision, in a
// loop, and keeps what it saw: calls that worked and failed, the ids whose
// outcomes the agent acknowledged, the model versions that served.
type streamer struct {
	cl    *client.Client
	batch int
	pause time.Duration // between rounds; 0 = as fast as answers come

	nextID   atomic.Uint64
	decided  atomic.Int64 // decide calls answered
	failed   atomic.Int64 // decide calls that failed
	acked    atomic.Int64 // outcomes the agent acknowledged
	ackFails atomic.Int64 // outcome reports that failed
	quit     atomic.Bool  // finish: end after the round in flight

	mu sync.Mutex
	// ackedIDs are the acknowledged outcomes' ids; sameConn those of them
	// decided and acknowledged with no reconnect in between (so by one
	// agent process: a restarted agent does not know its predecessor's
	// tasks and logs nothing for them).
	ackedIDs, sameConn []uint64
	versions           map[string]int64
	lastErr            error

	cancel context.CancelFunc
	done   chan struct{}
}

func startStreamer(cl *client.Client, firstID uint64, batch int, pause time.Duration) *streamer {
	s := &streamer{cl: cl, batch: batch, pause: pause, versions: map[string]int64{}, done: make(chan struct{})}
	s.nextID.Store(firstID)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.run(ctx)
	return s
}

func (s *streamer) run(ctx context.Context) {
	defer close(s.done)
	for ctx.Err() == nil && !s.quit.Load() {
		s.round(ctx)
		if s.pause > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(s.pause):
			}
		}
	}
}

// round is one decide call and the outcome report of its decisions.
func (s *streamer) round(ctx context.Context) {
	first := s.nextID.Add(uint64(s.batch)) - uint64(s.batch)
	batch := make([]*wire.Task, s.batch)
	classes := []string{"realtime-check", "scoring", "batch-infer"}
	for i := range batch {
		k := int(first+uint64(i)) % 3
		batch[i] = &wire.Task{Id: first + uint64(i), Class: classes[k], SlaMs: float32(20 * (k + 1)), CostMs: float32(2 * (k + 1))}
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	before := s.cl.Reconnects()
	resp, err := s.cl.Decide(cctx, batch)
	if err != nil {
		if ctx.Err() == nil {
			s.failed.Add(1)
			s.noteErr(err)
			time.Sleep(5 * time.Millisecond)
		}
		return
	}
	s.decided.Add(1)
	outs := make([]*wire.Outcome, 0, len(resp.GetDecisions()))
	for _, d := range resp.GetDecisions() {
		outs = append(outs, &wire.Outcome{Id: d.GetId(), LatencyMs: 3, ServiceMs: 2, SlaMet: true})
	}
	n, err := s.cl.ReportOutcomes(cctx, outs)
	if err != nil {
		if ctx.Err() == nil {
			s.ackFails.Add(1)
			s.noteErr(err)
		}
		return
	}
	same := s.cl.Reconnects() == before
	s.acked.Add(int64(n))
	s.mu.Lock()
	s.versions[resp.GetModel()]++
	for _, o := range outs[:n] {
		s.ackedIDs = append(s.ackedIDs, o.GetId())
		if same {
			s.sameConn = append(s.sameConn, o.GetId())
		}
	}
	s.mu.Unlock()
}

func (s *streamer) noteErr(err error) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}

// stop ends the loop and waits for the call in flight, which it cancels:
// an outcome report cut short may still have reached the agent.
func (s *streamer) stop() {
	s.cancel()
	<-s.done
}

// finish ends the loop after the round in flight has its answers, so that
// every report the agent took is one the streamer saw acknowledged: what a
// test that balances the agent's records against the acknowledged
// outcomes needs (stop can cut a report the agent already logged).
func (s *streamer) finish() {
	s.quit.Store(true)
	<-s.done
	s.cancel()
}

// snapshot copies what the streamer saw so far.
func (s *streamer) snapshot() (acked, sameConn []uint64, versions map[string]int64, lastErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	versions = make(map[string]int64, len(s.versions))
	for v, n := range s.versions {
		versions[v] = n
	}
	return append([]uint64(nil), s.ackedIDs...), append([]uint64(nil), s.sameConn...), versions, s.lastErr
}

// quietLogger drops what the clients and writers of the fault tests log:
// the faults make them say a lot, and the tests assert on counters.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
