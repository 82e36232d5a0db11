package serve_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"math"
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
	return backend.NewPolicy(d, nodeSnapshot(d.Version())), d
}

// nodeSnapshot is a node state as the agent publishes it: the
// triage.state.v3 vector of no task (the task features neutral) on a node
// with 20 tasks in flight over 4 workers, busy CPUs and some queueing
// delay, each feature with the source the agent names for it.
func nodeSnapshot(model string) *wire.NodeState {
	nan := math.NaN()
	const queueLen, workers = 20, 4
	vec := policy.Vector(&policy.Inputs{
		QueueLen: queueLen, Workers: workers, SLAMs: nan, CostMs: nan, ClassP50Ms: nan, ClassP99Ms: nan,
		AccelMemFill: 0, RunqP50Us: 12, RunqP99Us: 480, AcceptQueueFill: 0.1, BlkioP99Us: 900, CPUUtil: 0.4,
		RetransFraction: 0.0025, SyscallP99Us: nan, WaitP50Ms: 3, WaitP99Ms: 40,
	})
	var sources [policy.NumFeatures]string
	for f := range sources {
		sources[f] = "agent" // the queue and the backlogs
	}
	for _, f := range []int{policy.FeatSLA, policy.FeatCost, policy.FeatCostOverSLA} {
		sources[f] = "descriptor"
	}
	for _, f := range []int{policy.FeatClassP50, policy.FeatClassP99, policy.FeatWaitP50, policy.FeatWaitP99, policy.FeatClassP99OverSLA, policy.FeatWaitP99OverSLA} {
		sources[f] = "outcomes"
	}
	for _, f := range policy.KernelFeatures {
		sources[f] = "ebpf"
	}
	sources[policy.FeatCPUUtil], sources[policy.FeatAccelMem] = "procfs", "none"
	return &wire.NodeState{
		Epoch: 1, UnixNano: time.Now().UnixNano(), Features: vec[:], Sources: sources[:],
		RunqP50Us: 12, RunqP99Us: 480, QueueLen: queueLen, QueueCap: workers, CpuUtil: 0.4, Model: model, Node: "test-node",
	}
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

// startGoServer starts an endpoint (startServer) serving the plain Go MLP
// (goBackend).
func startGoServer(t testing.TB, cfg serve.Config) *testServer {
	t.Helper()
	b, _ := goBackend()
	return startServer(t, cfg, b)
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

// callCtx bounds a test's calls: a hung endpoint fails the test in 10 s
// instead of hanging it. It is cancelled when the test ends.
func callCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually calls try every 20 ms until it succeeds, and fails t with
// what and try's last error once within has passed.
func eventually(t testing.TB, within time.Duration, what string, try func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := try()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dialAndClose opens a client connection to ts and closes it again.
func dialAndClose(ctx context.Context, ts *testServer) error {
	c, err := client.Dial(ctx, ts.addr(), ts.clientConfig())
	if err == nil {
		c.Close()
	}
	return err
}

// wantTooManyConnections dials once more and wants the endpoint to say
// why it refuses: CodeTooManyConnections, after the handshake.
func (ts *testServer) wantTooManyConnections(t testing.TB, ctx context.Context, what string) {
	t.Helper()
	_, err := client.Dial(ctx, ts.addr(), ts.clientConfig())
	var se *client.ServerError
	if !errors.As(err, &se) || se.Code != wire.CodeTooManyConnections {
		t.Fatalf("%s: err %v, want CodeTooManyConnections", what, err)
	}
}

// dialTCPAndRead opens a pinned TLS connection (HTTP/1.1) to the TCP port
// and reads one byte within 5 s. A connection refused at accept fails the
// dial or the read; the error says which.
func (ts *testServer) dialTCPAndRead() error {
	tc, err := tls.Dial("tcp", ts.TCPAddr().String(), pinnedTLS(ts, "http/1.1"))
	if err != nil {
		return err
	}
	defer tc.Close()
	tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = tc.Read(make([]byte, 1))
	return err
}

// decideOverTheWire decides n sample tasks through served, over a real
// triage/1 connection, and the same tasks through ref in process, for a
// test to compare the two answers.
func decideOverTheWire(t *testing.T, served, ref serve.Backend, n int) (tasks []*wire.Task, got *wire.DecideResponse, want []*wire.Decision) {
	t.Helper()
	ts := startServer(t, serve.Config{}, served)
	c := ts.dial(t, ts.clientConfig())
	ctx := callCtx(t)
	tasks = sampleTasks(n)
	got, err := c.Decide(ctx, tasks)
	if err != nil {
		t.Fatalf("Decide over triage/1: %v", err)
	}
	if want, _, _, err = ref.Decide(ctx, tasks); err != nil {
		t.Fatalf("Decide in process: %v", err)
	}
	return tasks, got, want
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
	ctx := callCtx(t)
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
