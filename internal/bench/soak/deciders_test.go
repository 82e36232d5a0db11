package soak

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/internal/bench/backend"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// slowBackend answers every decide call late, like an agent whose round
// trip is long.
type slowBackend struct {
	*backend.Policy
	delay time.Duration
}

func (b slowBackend) Decide(ctx context.Context, tasks []*wire.Task) ([]*wire.Decision, string, uint64, error) {
	time.Sleep(b.delay)
	return b.Policy.Decide(ctx, tasks)
}

// startSlowEndpoint serves a real model over QUIC on loopback, each
// decide answered delay late.
func startSlowEndpoint(t *testing.T, delay time.Duration) *agentProc {
	t.Helper()
	d := policy.NewGoDecider(policy.BootstrapMLP(), policy.BootstrapMetadata())
	s, err := serve.New(serve.Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		slowBackend{Policy: backend.NewPolicy(d, nil), delay: delay})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return &agentProc{QUICAddr: s.Addr().String(), Fingerprint: s.Fingerprint()}
}

// runDeciders runs the deciders of cfg for d and returns them and the
// time they ran.
func runDeciders(t *testing.T, ap *agentProc, cfg Config, d time.Duration) (*deciders, time.Duration) {
	t.Helper()
	cfg.Duration, cfg.Warmup = 10*time.Second, time.Second // only checked, not used here
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	ds, err := startDeciders(ctx, ap, cfg, newLatencyHist(), start)
	if err != nil {
		t.Fatal(err)
	}
	ds.wait()
	return ds, time.Since(start)
}

// The deciders' load is open loop: against an endpoint that answers each
// call 10 ms late, 4 clients still offer and get decided the asked 800
// tasks a second (one call at a time per client, a closed loop, would
// reach at most 4 / 10 ms = 400), and every decision's outcome is
// acknowledged.
func TestDecidersOfferTheRateWhateverTheRoundTrip(t *testing.T) {
	ap := startSlowEndpoint(t, 10*time.Millisecond)
	const rate = 800
	ds, took := runDeciders(t, ap, Config{Rate: rate, Clients: 4}, 3*time.Second)
	offered := float64(ds.sent.Load()) / took.Seconds()
	achieved := float64(ds.decisions.Load()) / took.Seconds()
	t.Logf("%v: offered %.0f/s, achieved %.0f/s, %d not sent, %d errors, %d acknowledged", took, offered, achieved, ds.unsent.Load(), ds.errors.Load(), ds.acked.Load())
	if offered < 0.9*rate || offered > 1.1*rate {
		t.Errorf("offered %.0f tasks a second, asked %d", offered, rate)
	}
	if achieved < 0.8*rate {
		t.Errorf("achieved %.0f decisions a second, asked %d: the generator waits for answers", achieved, rate)
	}
	if ds.unsent.Load() != 0 || ds.errors.Load() != 0 {
		t.Errorf("%d tasks not sent, %d errors", ds.unsent.Load(), ds.errors.Load())
	}
	if ds.acked.Load() != ds.decisions.Load() {
		t.Errorf("%d outcomes acknowledged for %d decisions", ds.acked.Load(), ds.decisions.Load())
	}
}

// With MaxInFlight calls unanswered a due call is not sent but counted:
// offered plus unsent is still the schedule's rate, so a report tells a
// slow agent from a slow generator.
func TestDecidersCountWhatTheyCannotSend(t *testing.T) {
	ap := startSlowEndpoint(t, 20*time.Millisecond)
	const rate, clients = 800, 4
	ds, took := runDeciders(t, ap, Config{Rate: rate, Clients: clients, MaxInFlight: 1}, 2*time.Second)
	sent, unsent := ds.sent.Load(), ds.unsent.Load()
	asked := float64(sent+unsent) / took.Seconds()
	t.Logf("%v: %d sent, %d not sent (%.0f/s asked in all)", took, sent, unsent, asked)
	// One call in flight per client, each 20 ms: at most 50 a second each.
	if most := 1.2 * clients * 50 * took.Seconds(); float64(sent) > most {
		t.Errorf("%d tasks sent with one call in flight per client, at most %.0f expected", sent, most)
	}
	if asked < 0.9*rate || asked > 1.1*rate {
		t.Errorf("sent and not sent add up to %.0f a second, the schedule asked %d", asked, rate)
	}
}
