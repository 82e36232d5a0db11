package serve_test

import (
	"context"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/wire"
)

// Kill the agent, start a new one on the same port (same certificate, new
// state): the client's calls and both kinds of subscription resume by
// themselves, on fresh codec state.
func TestReconnectResyncs(t *testing.T) {
	cert, err := serve.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := goBackend()
	s1 := startServer(t, serve.Config{Certificate: &cert, StateInterval: 5 * time.Millisecond}, b1)
	addr := s1.addr()
	cfg := s1.clientConfig()
	cfg.MaxBackoff = 200 * time.Millisecond
	c := s1.dial(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Decide(ctx, sampleTasks(2)); err != nil {
		t.Fatal(err)
	}
	streamSub, err := c.Subscribe(ctx, wire.SubscribeMode_SUBSCRIBE_MODE_STREAM)
	if err != nil {
		t.Fatal(err)
	}
	dgSub, err := c.Subscribe(ctx, wire.SubscribeMode_SUBSCRIBE_MODE_DATAGRAM)
	if err != nil {
		t.Fatal(err)
	}
	waitEpoch(t, ctx, streamSub, 1, "stream, first agent")
	waitEpoch(t, ctx, dgSub, 1, "datagram, first agent")

	s1.stop(t)
	// While the agent is down, calls fail fast with an error rather than hang.
	downCtx, downCancel := context.WithTimeout(ctx, 3*time.Second)
	if _, err := c.Decide(downCtx, sampleTasks(1)); err == nil {
		t.Fatal("Decide succeeded with the agent down")
	}
	downCancel()

	b2, _ := goBackend()
	b2.SetState(&wire.NodeState{Epoch: 500, UnixNano: time.Now().UnixNano(), Features: b1.State().GetFeatures(), Node: "second-agent"})
	s2, err := serve.New(serve.Config{Addr: addr, Certificate: &cert, StateInterval: 5 * time.Millisecond, Logger: quietLogger()}, b2)
	if err != nil {
		t.Fatalf("restarting on %s: %v", addr, err)
	}
	ts2 := &testServer{Server: s2, done: make(chan error, 1)}
	go func() { ts2.done <- s2.Serve() }()
	t.Cleanup(func() { ts2.stop(t) })

	var resp *wire.DecideResponse
	for {
		resp, err = c.Decide(ctx, sampleTasks(2))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no reconnect: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp.GetStateEpoch() != 500 {
		t.Errorf("answer from epoch %d, want the new agent's 500", resp.GetStateEpoch())
	}
	waitEpoch(t, ctx, streamSub, 500, "stream, after restart")
	waitEpoch(t, ctx, dgSub, 500, "datagram, after restart")
	if c.Reconnects() < 1 {
		t.Errorf("Reconnects = %d", c.Reconnects())
	}
}

func waitEpoch(t *testing.T, ctx context.Context, ch <-chan *wire.NodeState, epoch uint64, what string) {
	t.Helper()
	for {
		select {
		case st, ok := <-ch:
			if !ok {
				t.Fatalf("%s: subscription closed", what)
			}
			if st.GetEpoch() == epoch {
				return
			}
		case <-ctx.Done():
			t.Fatalf("%s: epoch %d never arrived", what, epoch)
		}
	}
}
