package agent

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// syncBuffer collects log lines from the agent's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testAgent struct {
	*Agent
	token    string       // sent by get, when the agent has tokens
	hc       *http.Client // the admin port's client (TLS when AdminTLS)
	scheme   string
	logs     *syncBuffer
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
}

// startAgent runs a real agent on loopback ports chosen by the kernel. The
// caller's cfg fields win; the defaults here keep the test's files in its
// temporary directory.
func startAgent(t testing.TB, cfg Config) *testAgent {
	t.Helper()
	if cfg.QUICAddr == "" {
		cfg.QUICAddr = "127.0.0.1:0"
	}
	if cfg.AdminAddr == "" {
		cfg.AdminAddr = "127.0.0.1:0"
	}
	if cfg.ExperienceDir == "" {
		cfg.ExperienceDir = filepath.Join(t.TempDir(), "experience")
	}
	if cfg.FlamegraphDir == "" {
		cfg.FlamegraphDir = disabledDir
	}
	if cfg.StateInterval == 0 {
		cfg.StateInterval = 20 * time.Millisecond
	}
	if cfg.Device == "" {
		cfg.Device = policy.DeviceCPU
	}
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("starting the agent: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ta := &testAgent{Agent: a, logs: logs, cancel: cancel, done: make(chan error, 1), hc: http.DefaultClient, scheme: "http"}
	if cfg.AdminTLS {
		// The admin port serves the endpoint's certificate: pinned.
		pin := client.Config{PinSHA256: a.Fingerprint()}
		ta.hc = &http.Client{Transport: &http.Transport{TLSClientConfig: pin.TLSConfig("localhost", "http/1.1")}}
		ta.scheme = "https"
	}
	if len(cfg.Tokens) > 0 {
		ta.token = cfg.Tokens[0]
	}
	go func() { ta.done <- a.Run(ctx) }()
	t.Cleanup(ta.stop)
	waitFor(t, 10*time.Second, "agent ready", func() bool {
		code, _ := ta.get(t, "/readyz")
		return code == http.StatusOK
	})
	return ta
}

// stop ends Run and waits for it (once; later calls return at once).
func (ta *testAgent) stop() {
	ta.stopOnce.Do(func() {
		ta.cancel()
		select {
		case <-ta.done:
		case <-time.After(10 * time.Second):
		}
	})
}

func (ta *testAgent) url(path string) string {
	return ta.scheme + "://" + ta.AdminAddr().String() + path
}

func (ta *testAgent) get(t testing.TB, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", ta.url(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ta.token != "" {
		req.Header.Set("Authorization", "Bearer "+ta.token)
	}
	resp, err := ta.hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (ta *testAgent) dial(t testing.TB) *client.Client {
	t.Helper()
	cl, err := client.Dial(context.Background(), ta.QUICAddr().String(), client.Config{PinSHA256: ta.Fingerprint(), ServerName: "localhost"})
	if err != nil {
		t.Fatalf("dialing the agent: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// metric returns the value of one sample line of /metrics (name with labels), or -1.
func (ta *testAgent) metric(t testing.TB, sample string) float64 {
	t.Helper()
	_, body := ta.get(t, "/metrics")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return x
			}
		}
	}
	return -1
}

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tasks(from, n int) []*wire.Task {
	out := make([]*wire.Task, n)
	classes := []string{"realtime-check", "scoring", "batch-infer"}
	slas := []float32{20, 200, 2000}
	for i := range out {
		k := (from + i) % 3
		out[i] = &wire.Task{Id: uint64(from + i + 1), Class: classes[k], SlaMs: slas[k], CostMs: slas[k] / 10}
	}
	return out
}

// writeModel writes an ONNX model of m with the given version.
func writeModel(t testing.TB, path string, m *policy.MLP, version string) {
	t.Helper()
	b, err := policy.MarshalONNX(m, policy.CurrentMetadata(version, "test model"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// alwaysMLP is a model that puts every task at priority p.
func alwaysMLP(p int) *policy.MLP {
	hidden := policy.Dense{In: policy.NumFeatures, Out: 1, W: make([]float32, policy.NumFeatures), B: []float32{1}}
	out := policy.Dense{In: 1, Out: policy.NumActions, W: make([]float32, policy.NumActions), B: make([]float32, policy.NumActions)}
	out.B[p] = 10
	return &policy.MLP{Layers: []policy.Dense{hidden, out}}
}
