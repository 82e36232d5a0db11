package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/internal/testchild"
	"github.com/triage-agent/triage/wire"
)

// childEnv makes the test binary run an agent instead of the tests, so a
// test can SIGKILL a real agent process.
const childEnv = "TRIAGE_AGENT_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChildAgent())
	}
	os.Exit(m.Run())
}

func runChildAgent() int {
	cfg := Config{
		QUICAddr: os.Getenv("CHILD_QUIC"), AdminAddr: os.Getenv("CHILD_ADMIN"),
		TLSCertFile: os.Getenv("CHILD_CERT"), TLSKeyFile: os.Getenv("CHILD_KEY"),
		ExperienceDir: os.Getenv("CHILD_EXP"), FlamegraphDir: disabledDir, NoEBPF: true, Device: "cpu",
		StateInterval: 20 * time.Millisecond,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child agent:", err)
		return 1
	}
	return 0
}

func freePorts(t *testing.T) (udp, tcp string) {
	t.Helper()
	u, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	udp = u.LocalAddr().String()
	u.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcp = l.Addr().String()
	l.Close()
	return udp, tcp
}

func writeCert(t *testing.T, dir string) (certFile, keyFile, fingerprint string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	cert, err := serve.WriteSelfSigned(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, serve.Fingerprint(cert.Certificate[0])
}

type childAgent struct {
	cmd   *exec.Cmd
	admin string
}

func startChild(t *testing.T, env []string, admin string) *childAgent {
	t.Helper()
	cmd := testchild.Command(env...)
	cmd.Stderr = os.Stderr
	if !testing.Verbose() {
		cmd.Stderr = nil
	}
	testchild.Start(t, cmd)
	c := &childAgent{cmd: cmd, admin: admin}
	// Generous: a loaded CI machine (other packages' tests beside this one)
	// once took more than 20 s to start an agent.
	waitFor(t, 60*time.Second, "child agent ready", func() bool {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return c
}

// Fault: the agent is killed with SIGKILL and restarted while a client
// streams decisions and outcomes. The client resyncs by itself, and every
// outcome the agent acknowledged is in the experience log (at most a torn
// last record is lost, and it is not an acknowledged one).
func TestKillAndRestartWhileStreaming(t *testing.T) {
	dir := t.TempDir()
	quic, admin := freePorts(t)
	certFile, keyFile, fp := writeCert(t, dir)
	expDir := filepath.Join(dir, "experience")
	env := []string{childEnv + "=1", "CHILD_QUIC=" + quic, "CHILD_ADMIN=" + admin, "CHILD_CERT=" + certFile, "CHILD_KEY=" + keyFile, "CHILD_EXP=" + expDir}

	first := startChild(t, env, admin)
	cl, err := client.Dial(context.Background(), quic, client.Config{PinSHA256: fp, ServerName: "localhost", MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		// A SIGKILLed agent sends no CONNECTION_CLOSE: the client notices
		// through the idle timeout (30 s by default).
		IdleTimeout: 2 * time.Second, KeepAlive: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var acked, decidedOK, failures atomic.Int64
	var phase atomic.Int32 // 0 before the kill, 1 after the restart
	var afterRestartOK atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		id := uint64(0)
		for {
			select {
			case <-stop:
				return
			default:
			}
			batch := tasks(int(id), 10)
			id += 10
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			resp, err := cl.Decide(ctx, batch)
			if err != nil {
				cancel()
				failures.Add(1)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			decidedOK.Add(1)
			if phase.Load() == 1 {
				afterRestartOK.Add(1)
			}
			outs := make([]*wire.Outcome, 0, len(resp.GetDecisions()))
			for _, d := range resp.GetDecisions() {
				outs = append(outs, &wire.Outcome{Id: d.GetId(), LatencyMs: 3, SlaMet: true})
			}
			if n, err := cl.ReportOutcomes(ctx, outs); err == nil {
				acked.Add(int64(n))
			} else {
				failures.Add(1)
			}
			cancel()
		}
	}()
	waitFor(t, 20*time.Second, "streaming to the first agent", func() bool { return acked.Load() >= 500 })
	testchild.Kill(t, first.cmd)
	ackedBeforeKill := acked.Load()

	second := startChild(t, env, admin)
	phase.Store(1)
	waitFor(t, 30*time.Second, "the client to resync with the restarted agent", func() bool { return afterRestartOK.Load() >= 20 })
	close(stop)
	wg.Wait()
	unknown := scrapeMetric(t, admin, "triage_outcomes_unknown_total")
	second.cmd.Process.Signal(syscall.SIGTERM)
	second.cmd.Wait()

	st, err := experience.ReadDirWith(expDir, experience.ReadOptions{}, nil)
	if err != nil {
		t.Fatalf("reading the experience log after SIGKILL and restart: %v", err)
	}
	// Every acknowledged outcome of a task the same agent decided is a record:
	// outcomes the second agent did not know (decided by the first) are the
	// only acknowledged ones without a record.
	want := acked.Load() - int64(unknown)
	if int64(st.Records) < want {
		t.Fatalf("%d records, want at least %d (acked %d, %d of them unknown to the restarted agent; %d acked before the kill)",
			st.Records, want, acked.Load(), int64(unknown), ackedBeforeKill)
	}
	if st.Segments < 1 || cl.Reconnects() < 1 {
		t.Fatalf("segments %d, reconnects %d", st.Segments, cl.Reconnects())
	}
	t.Logf("acked %d (before kill %d), records %d, unknown after restart %v, reconnects %d, failed calls %d",
		acked.Load(), ackedBeforeKill, st.Records, unknown, cl.Reconnects(), failures.Load())
}

func scrapeMetric(t *testing.T, admin, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				return x
			}
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}
