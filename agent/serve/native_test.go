package serve_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/internal/bench/backend"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

func TestNativeDecideMatchesPolicy(t *testing.T) {
	b, d := goBackend()
	// The same tasks through the backend in-process must give the same Q.
	tasks, resp, want := decideOverTheWire(t, b, b, 64)
	if resp.GetModel() != d.Version() || resp.GetStateEpoch() != 1 {
		t.Errorf("model %q epoch %d, want %q 1", resp.GetModel(), resp.GetStateEpoch(), d.Version())
	}
	prios := map[uint32]int{}
	for i, got := range resp.GetDecisions() {
		if got.GetId() != tasks[i].GetId() {
			t.Fatalf("decision %d has id %d, want %d", i, got.GetId(), tasks[i].GetId())
		}
		if got.GetPriority() != want[i].GetPriority() || len(got.GetQ()) != policy.NumActions {
			t.Fatalf("decision %d: priority %d q %v, want %d %v", i, got.GetPriority(), got.GetQ(), want[i].GetPriority(), want[i].GetQ())
		}
		for k, q := range got.GetQ() {
			if q != want[i].GetQ()[k] {
				t.Fatalf("decision %d q[%d] = %v over the wire, %v in process", i, k, q, want[i].GetQ()[k])
			}
		}
		prios[got.GetPriority()]++
	}
	t.Logf("priorities over 64 tasks: %v", prios)
}

func TestNativeConcurrentPipelined(t *testing.T) {
	ts := startGoServer(t, serve.Config{})
	c := ts.dial(t, ts.clientConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const workers, calls = 16, 50
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			for i := 0; i < calls; i++ {
				tasks := sampleTasks(1 + (w+i)%8)
				tasks[0].Id = uint64(w*1000 + i)
				resp, err := c.Decide(ctx, tasks)
				if err != nil {
					errs <- err
					return
				}
				if resp.GetDecisions()[0].GetId() != tasks[0].Id {
					errs <- errors.New("answer matched to the wrong request")
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := ts.Stats().Requests.Load(); got != workers*calls {
		t.Errorf("server served %d requests, want %d", got, workers*calls)
	}
}

func TestNativeOutcomes(t *testing.T) {
	b, _ := goBackend()
	ts := startServer(t, serve.Config{}, b)
	c := ts.dial(t, ts.clientConfig())
	ctx := callCtx(t)
	n, err := c.ReportOutcomes(ctx, []*wire.Outcome{{Id: 1, LatencyMs: 3.5, SlaMet: true}, {Id: 2, LatencyMs: 80, SlaMet: false}})
	if err != nil || n != 2 {
		t.Fatalf("ReportOutcomes = %d, %v; want 2, nil", n, err)
	}
	if b.Outcomes() != 2 {
		t.Errorf("backend saw %d outcomes, want 2", b.Outcomes())
	}
	// A latency that is not a duration is the caller's mistake: refused in
	// the call path as an invalid argument (a 400 on HTTP), no longer passed
	// to the backend to fail as CodeInternal (FuzzJSONBodies found the 500).
	_, err = c.ReportOutcomes(ctx, []*wire.Outcome{{Id: 3, LatencyMs: -1}})
	var se *client.ServerError
	if !errors.As(err, &se) || se.Code != wire.CodeInvalidArgument {
		t.Fatalf("negative latency: err %v, want a ServerError with CodeInvalidArgument", err)
	}
}

func TestNativeBatchLimit(t *testing.T) {
	ts := startGoServer(t, serve.Config{MaxBatch: 8})
	c := ts.dial(t, ts.clientConfig())
	ctx := callCtx(t)
	_, err := c.Decide(ctx, sampleTasks(9))
	var se *client.ServerError
	if !errors.As(err, &se) || se.Code != wire.CodeBatchTooLarge {
		t.Fatalf("9 tasks with MaxBatch 8: err %v, want CodeBatchTooLarge", err)
	}
	// The refusal is per request: the same connection keeps working.
	if _, err := c.Decide(ctx, sampleTasks(8)); err != nil {
		t.Fatalf("8 tasks after the refusal: %v", err)
	}
}

// subscribeUpdating subscribes in mode to a server whose backend takes a
// new snapshot every 5 ms (and publishes every 5 ms) until the test ends.
func subscribeUpdating(t *testing.T, mode wire.SubscribeMode) (*testServer, context.Context, <-chan *wire.NodeState) {
	t.Helper()
	b, _ := goBackend()
	ts := startServer(t, serve.Config{StateInterval: 5 * time.Millisecond}, b)
	c := ts.dial(t, ts.clientConfig())
	ctx := callCtx(t)
	ch, err := c.Subscribe(ctx, mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(updateState(b, 5*time.Millisecond))
	return ts, ctx, ch
}

func TestSubscribeStream(t *testing.T) {
	_, ctx, ch := subscribeUpdating(t, wire.SubscribeMode_SUBSCRIBE_MODE_STREAM)
	var last uint64
	for i := 0; i < 20; i++ {
		select {
		case st, ok := <-ch:
			if !ok {
				t.Fatal("subscription closed early")
			}
			if st.GetEpoch() <= last && i > 0 {
				t.Fatalf("epoch %d after %d: stream mode must be in order", st.GetEpoch(), last)
			}
			if len(st.GetFeatures()) != policy.NumFeatures {
				t.Fatalf("snapshot has %d features", len(st.GetFeatures()))
			}
			last = st.GetEpoch()
		case <-ctx.Done():
			t.Fatalf("only %d snapshots in time", i)
		}
	}
}

func TestSubscribeDatagram(t *testing.T) {
	ts, ctx, ch := subscribeUpdating(t, wire.SubscribeMode_SUBSCRIBE_MODE_DATAGRAM)
	seen := map[uint64]bool{}
	for len(seen) < 20 {
		select {
		case st := <-ch:
			seen[st.GetEpoch()] = true
		case <-ctx.Done():
			t.Fatalf("only %d distinct snapshots in time", len(seen))
		}
	}
	if ts.Stats().DatagramsAcked.Load() == 0 {
		t.Error("the server saw no acknowledgement")
	}
	// Deltas of slowly changing snapshots: the wire carries less than the payloads.
	if p, w := ts.Stats().PayloadBytes.Load(), ts.Stats().WireBytes.Load(); p == 0 || w >= p {
		t.Errorf("payload %d bytes, wire %d: the deltas saved nothing", p, w)
	} else {
		t.Logf("datagram subscription: %d payload bytes sent as %d wire bytes (%.0f%%)", p, w, 100*float64(w)/float64(p))
	}
}

// updateState bumps the backend's snapshot every period (new epoch, new
// timestamp, a slowly moving run-queue value) until the returned stop.
func updateState(b *backend.Policy, period time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			old := b.State()
			st := &wire.NodeState{
				Epoch: old.GetEpoch() + 1, UnixNano: time.Now().UnixNano(),
				Features: append([]float32(nil), old.GetFeatures()...), Sources: old.GetSources(),
				RunqP50Us: old.GetRunqP50Us() + 1, RunqP99Us: old.GetRunqP99Us(), QueueLen: old.GetQueueLen(),
				QueueCap: old.GetQueueCap(), CpuUtil: old.GetCpuUtil(), Model: old.GetModel(), Node: old.GetNode(),
			}
			st.Features[policy.FeatRunqP50] = float32(int(old.GetEpoch())%100) / 100
			b.SetState(st)
		}
	}()
	return func() { close(done); <-finished }
}
