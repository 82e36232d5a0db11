package serve_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/internal/bench/backend"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// quietLogger keeps the expected rejections out of the test output unless -v.
func quietLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// goBackend is the real plain Go MLP (the bootstrap policy) over a node state
// set by the test: the endpoint's QUIC, TLS, codec and framing are all real.
func goBackend() (*backend.Policy, *policy.GoDecider) {
	d := policy.NewGoDecider(policy.BootstrapMLP(), policy.BootstrapMetadata())
	st := &wire.NodeState{
		Epoch: 1, UnixNano: time.Now().UnixNano(),
		Features:  []float32{0.2, 1, 0.5, 0.5, 0.5, 0, 0.3, 0.6, 0.1, 0.2, 0.4, 0.05},
		Sources:   []string{"agent", "descriptor", "descriptor", "outcomes", "outcomes", "neutral", "ebpf", "ebpf", "ebpf", "ebpf", "procfs", "ebpf"},
		RunqP50Us: 12, RunqP99Us: 480, QueueLen: 20, QueueCap: 100, CpuUtil: 0.4, Model: d.Version(), Node: "test-node",
	}
	return backend.NewPolicy(d, st), d
}

type testServer struct {
	*serve.Server
	done     chan error
	stopOnce sync.Once
}

// startServer starts an endpoint on a free loopback port and closes it when
// the test ends.
func startServer(t testing.TB, cfg serve.Config, b serve.Backend) *testServer {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	s, err := serve.New(cfg, b)
	if err != nil {
		t.Fatalf("serve.New: %v", err)
	}
	ts := &testServer{Server: s, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve() }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

func (ts *testServer) stop(t testing.TB) {
	ts.stopOnce.Do(func() { ts.doStop(t) })
}

func (ts *testServer) doStop(t testing.TB) {
	if err := ts.Close(); err != nil {
		t.Errorf("closing server: %v", err)
	}
	select {
	case <-ts.done:
	case <-time.After(5 * time.Second):
		t.Errorf("Serve did not return after Close")
	}
}

func (ts *testServer) addr() string { return ts.Addr().String() }

// clientConfig pins the server's self-signed certificate.
func (ts *testServer) clientConfig() client.Config {
	return client.Config{PinSHA256: ts.Fingerprint(), Logger: quietLogger()}
}

func (ts *testServer) dial(t testing.TB, cfg client.Config) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, ts.addr(), cfg)
	if err != nil {
		t.Fatalf("client.Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func sampleTasks(n int) []*wire.Task {
	classes := []string{"interactive", "batch", "ml-inference"}
	out := make([]*wire.Task, n)
	for i := range out {
		out[i] = &wire.Task{Id: uint64(1000 + i), Class: classes[i%3], SlaMs: float32(10 + 40*(i%5)), CostMs: float32(1 + i%7), Tenant: "t1"}
	}
	return out
}

// expectGoodClient asserts the server still serves a well-behaved client: the
// point of every bad-input test.
func expectGoodClient(t *testing.T, ts *testServer, cfg client.Config) {
	t.Helper()
	c := ts.dial(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Decide(ctx, sampleTasks(3))
	if err != nil {
		t.Fatalf("good client after bad input: %v", err)
	}
	if len(resp.GetDecisions()) != 3 {
		t.Fatalf("good client got %d decisions, want 3", len(resp.GetDecisions()))
	}
}

func pinnedTLS(ts *testServer, alpn string) *tls.Config {
	return ts.clientConfig().TLSConfig("localhost", alpn)
}
