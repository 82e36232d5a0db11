package signals

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/internal/faulttest"
	"github.com/triage-agent/triage/internal/testenv"
)

func requireRoot(t *testing.T) {
	t.Helper()
	testenv.RequireBPF(t, "eBPF probes need root; the procfs tests cover unprivileged runs")
}

// tinyListener listens on 127.0.0.1 with listen(fd, backlog) and fills its
// accept queue with connects nobody accepts.
func tinyListener(t *testing.T, backlog int) uint16 {
	t.Helper()
	port := faulttest.ListenBacklog(t, backlog)
	faulttest.DialBurst(t, port, 3*backlog+3, 3*time.Second)
	time.Sleep(100 * time.Millisecond)
	return port
}

func fsyncSome(t *testing.T, n int) {
	f, err := os.CreateTemp(t.TempDir(), "fsync-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for i := 0; i < n; i++ {
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

// exercise creates load for every signal while the collector samples.
func exercise(t *testing.T, c *Collector) (port uint16) {
	port = tinyListener(t, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		proc.SpinThreads(3*runtime.NumCPU(), 1200*time.Millisecond) // overload: 3 runnable threads per CPU
	}()
	fsyncSome(t, 20)
	<-done
	c.Sample()
	return port
}

// exercisedSnapshot runs a collector with cfg, its slow sources sampled
// every 100 ms, under exercise's load, and returns its snapshot and the
// port of the full listener.
func exercisedSnapshot(t *testing.T, cfg Config, opts ...Option) (*Snapshot, uint16) {
	t.Helper()
	cfg.SlowInterval, cfg.AcceptInterval = 100*time.Millisecond, 100*time.Millisecond
	c, err := New(cfg, append(opts, WithWindow(2*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	port := exercise(t, c)
	var s Snapshot
	c.Snapshot(&s)
	return &s, port
}

func TestCollectorEBPFUnderLoad(t *testing.T) {
	requireRoot(t)
	s, port := exercisedSnapshot(t, Config{}, WithWatchPIDs(os.Getpid()))
	for _, p := range s.Probes {
		if !p.Attached {
			t.Errorf("probe %s not attached: %s", p.Name, p.Reason)
		}
	}
	for name, src := range map[string]Source{"runq": s.RunQueue.Source, "accept": s.Accept.Source, "blkio": s.Blkio.Source, "syscall": s.Syscall.Source, "tcp": s.TCP.Source} {
		if src.Kind != SourceEBPF {
			t.Errorf("%s source %+v, want ebpf", name, src)
		}
	}
	if p99 := float64(s.RunQueue.Latency.P99Us); !(p99 > 1000) {
		t.Errorf("run-queue p99 %.0f µs under overload, want > 1 ms", p99)
	}
	full := false
	for _, l := range s.Accept.Listeners {
		full = full || (l.Port == port && l.Max == 2 && l.Backlog >= 2)
	}
	if !full || s.Accept.Fill != 1 {
		t.Errorf("accept: fill %v, listeners %+v; want port %d full", s.Accept.Fill, s.Accept.Listeners, port)
	}
	if s.Blkio.Latency.Count < 20 || !s.Blkio.Latency.P99Us.Known() {
		t.Errorf("blkio: %+v after 20 fsyncs", s.Blkio.Latency)
	}
	if s.Syscall.Latency.Count == 0 {
		t.Errorf("syscall latency of the watched test process has no samples")
	}
	if !s.CPU.Util.Known() || s.CPU.Util < 0.5 {
		t.Errorf("CPU util %v under overload", s.CPU.Util)
	}
	b, _ := json.Marshal(s)
	t.Logf("snapshot: %s", b)
}

func checkProcfsSnapshot(t *testing.T, s *Snapshot, port uint16) {
	t.Helper()
	for name, src := range map[string]Source{"runq": s.RunQueue.Source, "blkio": s.Blkio.Source, "tcp": s.TCP.Source, "cpu": s.CPU.Source} {
		if src.Kind != SourceProcfs {
			t.Errorf("%s source %+v, want procfs", name, src)
		}
	}
	if s.Syscall.Source.Kind != SourceNone {
		t.Errorf("syscall source %+v, want none", s.Syscall.Source)
	}
	for _, p := range s.Probes {
		if p.Attached || p.Reason == "" {
			t.Errorf("probe %+v: want detached with a reason", p)
		}
	}
	// schedstat of this process: its spinning threads waited.
	if m := float64(s.RunQueue.Latency.P99Us); !(m > 100) {
		t.Errorf("procfs run-queue mean wait %.0f µs under overload, want > 100 µs", m)
	}
	found := false
	for _, l := range s.Accept.Listeners {
		found = found || (l.Port == port && l.Backlog >= 2)
	}
	if !found || !(s.Accept.Fill > 0) {
		t.Errorf("procfs accept: fill %v listeners %+v, want port %d with backlog >= 2", s.Accept.Fill, s.Accept.Listeners, port)
	}
	if s.Blkio.Latency.Count == 0 {
		t.Errorf("diskstats saw no I/O after fsyncs: %+v", s.Blkio)
	}
	if !s.CPU.Util.Known() {
		t.Errorf("CPU util unknown")
	}
}

func TestCollectorProcfsFallbackWithBPFDisabled(t *testing.T) {
	s, port := exercisedSnapshot(t, Config{DisableBPF: true})
	checkProcfsSnapshot(t, s, port)
	if s.Accept.Source.Kind != SourceNetlink || s.Accept.Fill != 1 {
		t.Errorf("accept via sock_diag: source %+v fill %v, want netlink and a full queue", s.Accept.Source, s.Accept.Fill)
	}
}

// TestAcceptProcNetTCPFallback covers the last fallback, /proc/net/tcp,
// used where even sock_diag is unavailable: it sees the backlog but not
// the max, which comes from configuration.
func TestAcceptProcNetTCPFallback(t *testing.T) {
	cfg := Config{DisableBPF: true, AcceptMaxBacklog: 2, noSockDiag: true}.withDefaults()
	port := tinyListener(t, 2)
	s := newAcceptSource(&cfg, errDisabled)
	if s.src.Kind != SourceProcfs {
		t.Fatalf("source %+v, want procfs", s.src)
	}
	s.sample(time.Now())
	var out AcceptSignal
	s.fill(&out)
	found := false
	for _, l := range out.Listeners {
		found = found || (l.Port == port && l.Backlog >= 2 && l.Max == 2)
	}
	if !found || out.Fill != 1 {
		t.Fatalf("fill %v listeners %+v, want port %d full", out.Fill, out.Listeners, port)
	}
}

const unprivEnv = "TRIAGE_SIGNALS_UNPRIV"

// TestCollectorUnprivilegedHelper is the child of the unprivileged test:
// it runs with default config (BPF enabled) as nobody and prints the
// snapshot as JSON.
func TestCollectorUnprivilegedHelper(t *testing.T) {
	if os.Getenv(unprivEnv) == "" {
		t.Skip("child process of TestCollectorUnprivileged")
	}
	s, port := exercisedSnapshot(t, Config{})
	checkProcfsSnapshot(t, s, port)
	if s.Accept.Source.Kind != SourceNetlink {
		t.Errorf("accept source %+v, want netlink (sock_diag needs no privilege)", s.Accept.Source)
	}
	b, _ := json.Marshal(s)
	os.Stdout.Write(append([]byte("SNAPSHOT "), append(b, '\n')...))
}

// TestCollectorUnprivileged re-executes this test binary as uid/gid 65534
// with no capabilities: every probe must fail to load, say why, and the
// procfs fallbacks must take over.
func TestCollectorUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to the unprivileged user")
	}
	dir, err := os.MkdirTemp("", "triage-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "signals.test")
	src, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestCollectorUnprivilegedHelper$", "-test.v")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), unprivEnv+"=1", "TMPDIR="+tmp, "HOME="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: false}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("unprivileged child failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "SNAPSHOT ") {
		t.Fatalf("child printed no snapshot:\n%s", out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "SNAPSHOT ") {
			var s Snapshot
			if err := json.Unmarshal([]byte(line[9:]), &s); err != nil {
				t.Fatal(err)
			}
			for _, p := range s.Probes {
				if !strings.Contains(p.Reason, "permitted") && !strings.Contains(p.Reason, "permission") {
					t.Errorf("probe %s reason %q does not say it lacked permission", p.Name, p.Reason)
				}
			}
			t.Logf("unprivileged sources: runq=%s accept=%s blkio=%s syscall=%s tcp=%s",
				s.RunQueue.Source.Kind, s.Accept.Source.Kind, s.Blkio.Source.Kind, s.Syscall.Source.Kind, s.TCP.Source.Kind)
		}
	}
}

// TestCollectorWithoutOneProbe disables one probe: its signal falls back
// and says why, the others stay on eBPF.
func TestCollectorWithoutOneProbe(t *testing.T) {
	requireRoot(t)
	c, err := New(Config{}, WithoutProbe(ProbeRunqlat), WithoutProbe(ProbeBlkio))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var s Snapshot
	c.Snapshot(&s)
	if s.RunQueue.Source.Kind != SourceProcfs || !strings.Contains(s.RunQueue.Source.Reason, "disabled") {
		t.Errorf("runq source %+v, want procfs because disabled", s.RunQueue.Source)
	}
	if s.Blkio.Source.Kind != SourceProcfs {
		t.Errorf("blkio source %+v, want procfs", s.Blkio.Source)
	}
	if s.Accept.Source.Kind != SourceEBPF || s.TCP.Source.Kind != SourceEBPF {
		t.Errorf("accept %+v tcp %+v: the other probes must stay on eBPF", s.Accept.Source, s.TCP.Source)
	}
	for _, p := range s.Probes {
		off := p.Name == ProbeRunqlat || p.Name == ProbeBlkio
		if p.Attached == off {
			t.Errorf("probe %+v", p)
		}
	}
}
