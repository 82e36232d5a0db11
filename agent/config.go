// Package agent is the triage daemon: it wires the node signals, the state
// assembly, the policy (with hot reload and shadow evaluation), the QUIC
// endpoint, the experience log, the flame-graph recorder and the admin HTTP
// server into one process, and runs the decision loop between them.
package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/triage-agent/triage/agent/profiling"
	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/flamegraph"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
	"github.com/triage-agent/triage/policy/guard"
	"github.com/triage-agent/triage/wire"
)

// Config configures the agent. Its zero value runs the defaults of
// DESIGN.md: QUIC on UDP :4433 and gRPC and JSON on TCP :4433 (loopback only
// unless client authentication or InsecureListenAny is set), admin HTTP on
// :9090, a self-signed certificate, device auto, the embedded model, every
// probe the kernel supports.
type Config struct {
	// QUICAddr is the UDP address of the endpoint; "" applies the endpoint's
	// rule (127.0.0.1:4433 without client authentication, :4433 with it).
	QUICAddr string
	// TCPAddr is the TCP address of gRPC and JSON over HTTP/1.1 and HTTP/2;
	// "" means QUICAddr's host and port number. DisableTCP turns it off.
	TCPAddr    string
	DisableTCP bool
	// AdminAddr is the TCP address of the admin HTTP server; "" means ":9090".
	AdminAddr string
	// AdminTLS serves the admin port over TLS with the endpoint's
	// certificate (and, with ClientCAFile, accepts a client certificate of
	// that CA as a credential). Plain HTTP by default, for Prometheus and
	// kubelet probes.
	AdminTLS bool
	// AdminAuthAll makes /metrics, /healthz and /readyz require the token
	// (or a loopback peer) like every other admin endpoint.
	AdminAuthAll bool

	// ModelPath is the ONNX model to serve and to watch for hot reload; ""
	// serves the embedded default model.
	ModelPath string
	// ModelWatchInterval is how often ModelPath is checked; default 1s.
	ModelWatchInterval time.Duration
	// ShadowModelPath, when set, is a candidate model that decides on every
	// request in shadow (never served); promote it with POST /admin/promote.
	ShadowModelPath string
	// Device is auto, cpu or cuda; ORTLibrary the ONNX Runtime library ("" finds it).
	Device     string
	ORTLibrary string

	// TLS and client authentication of the endpoint. The files are read
	// again when they change (the next new connection gets the new ones).
	TLSCertFile, TLSKeyFile string
	ClientCAFile            string
	// CertHosts are added to the self-signed certificate's names (used when
	// no TLSCertFile is given): the node and pod addresses that clients
	// dial (the DaemonSet passes status.hostIP and status.podIP).
	CertHosts []string
	// Tokens are the bearer tokens of the endpoint and the admin port;
	// TokenFile adds those of a file (one per line), re-read when it
	// changes, so a token need not be on the command line or in the
	// environment, where /proc shows it.
	Tokens            []string
	TokenFile         string
	InsecureListenAny bool

	// The endpoint's connection limits (serve.Config, docs/endpoint.md),
	// QUIC and TCP connections counted together: MaxConns open at once in
	// all; MaxConnsPerIP open at once and MaxNewConnsPerIP new ones a
	// second per client address; MaxStreamsPerConn concurrent streams per
	// connection. 0 means serve's default (serve.DefaultMaxConns and the
	// others); a negative value is refused (ErrBadConfig).
	MaxConns          int
	MaxConnsPerIP     int
	MaxNewConnsPerIP  int
	MaxStreamsPerConn int

	// ExperienceDir is where outcomes are logged. "" means
	// /var/lib/triage/experience when that can be created, else no log
	// (with a warning); "-" disables the log.
	ExperienceDir     string
	ExperienceOptions experience.Options
	// FlamegraphDir keeps the recorded windows; "" means
	// /var/lib/triage/flamegraphs when that can be created; "-" disables
	// the recorder. FlamegraphInterval is a window's length; default 1m.
	FlamegraphDir      string
	FlamegraphInterval time.Duration
	FlamegraphMaxBytes int64
	// FlamegraphUnwind is how user stacks are walked: "auto" or "" (copy
	// and unwind by .eh_frame where the kernel allows, else frame
	// pointers), "dwarf", "fp" (see profiling.UnwindMode).
	FlamegraphUnwind string
	// FlamegraphCacheBytes caps the symboliser's cache: symbol tables,
	// inline indexes, unwind tables, JIT maps; default 16 MiB. It also
	// bounds the DWARF read at once to build inline frames.
	FlamegraphCacheBytes int

	// GoMemoryLimit is the soft limit of the Go runtime's memory in this
	// process (debug.SetMemoryLimit), set by New: it is process-wide, so 0
	// (the zero Config's) leaves the runtime as it is; `triage agent`
	// passes DefaultGoMemoryLimit. GOMEMLIMIT in the environment wins.
	GoMemoryLimit int64
	// MaxProcs is GOMAXPROCS for this process, set by New: process-wide,
	// so 0 (the zero Config's) leaves the runtime as it is; `triage agent`
	// passes DefaultMaxProcs. GOMAXPROCS in the environment wins.
	MaxProcs int
	// WindowMaxProcs is GOMAXPROCS while a flame-graph window is built and
	// written, where the agent runs on one P (MaxProcs 1, GOMAXPROCS not
	// in the environment) and the runtime had more to give; 0 (the zero
	// Config's) or 1 leaves windows on the agent's one P; `triage agent`
	// passes DefaultWindowMaxProcs. A second P lets decide calls be read
	// and answered beside a window instead of behind it.
	WindowMaxProcs int
	// MallocMmapThreshold fixes glibc's mmap threshold (the C heap's, ONNX
	// Runtime's) at this many bytes, set by New: process-wide, so 0 (the
	// zero Config's) leaves glibc as it is; `triage agent` passes
	// DefaultMallocMmapThreshold. MALLOC_MMAP_THRESHOLD_ or the
	// glibc.malloc.mmap_threshold tunable in the environment wins.
	MallocMmapThreshold int64
	// Nice is the scheduling niceness of the agent's threads (-20..19),
	// set by New: process-wide, so 0 (the zero Config's) leaves it as it
	// is. A negative one lets a decision preempt the node's work instead
	// of waiting behind it (DefaultNice says what `triage agent` uses);
	// it needs CAP_SYS_NICE, and without it the agent runs on at its own.
	Nice int
	// SchedSlice is the scheduling slice the agent's threads ask the
	// kernel for (MinSchedSlice..MaxSchedSlice), set by New: process-wide,
	// so 0 (the zero Config's) leaves the kernel's own. A short one lets a
	// woken decide call preempt a worker that has run past its own slice,
	// without a larger share of the CPU or any capability
	// (DefaultSchedSlice says what `triage agent` uses). A kernel older
	// than EEVDF's custom slices ignores it, and the agent says so.
	SchedSlice time.Duration

	// NodeName labels metrics and node-state snapshots (the DaemonSet sets
	// it from the downward API); "" means the host name.
	NodeName string

	// BatchWindow is how long the decision loop waits for more requests
	// after the first one of a batch. 0 (the default) batches only what
	// arrived while the previous batch ran: no added latency when idle,
	// large batches under load. MaxBatch caps a batch; default 512.
	BatchWindow time.Duration
	MaxBatch    int
	// Workers is the upstream executor's worker slots on this node, the
	// denominator of feature 0 (tasks decided and not finished per worker);
	// default the node's CPUs. An upstream that runs more (or fewer) tasks
	// at once than the node has CPUs sets it (docs/operating.md).
	Workers int
	// CPUs is the CPUs the executor's workers share on this node; default
	// the CPUs this agent may run on (runtime.NumCPU). Where the run queue
	// says they are oversubscribed and no foreground task has come for a
	// while, the agent holds back no more workers than the executor has
	// beyond them (policy.ReserveOnBusyCPUs; docs/policy.md). An executor
	// confined to fewer CPUs than the node has sets it.
	CPUs int
	// TaskTimeout ends the tracking of a task whose outcome never came; it
	// is logged as timed out. Default 30s. MaxPending bounds the tracked
	// tasks; default 65536 (the oldest is timed out early beyond it).
	TaskTimeout time.Duration
	MaxPending  int
	// AblateKernel serves the policy with the kernel features at their
	// neutral values (state.Config.BlindKernel), to measure on real workers
	// what reading the kernel is worth (`triage bench e2e --ablate kernel`
	// runs an agent so beside the normal one). The probes still run and
	// report on their own metrics; the state vector (what the policy, the
	// feature gauges, the node-state stream and the experience log see)
	// holds the kernel features neutral, their source "none".
	AblateKernel bool
	// StateInterval is how often the node-state snapshot is refreshed; default 100ms.
	StateInterval time.Duration
	// TableInterval is how often a decision table that clients subscribe
	// to is brought up to date (docs/local-decisions.md); default
	// DefaultTableInterval. TableMaxCells bounds its cells; default
	// DefaultTableMaxCells (the classes asked about least stay out).
	TableInterval time.Duration
	TableMaxCells int

	// Guard is the controller (policy/control: codel-lifo, shed-pi,
	// gradient2) that decides the tasks the model is unsure of: where its
	// ensemble's members disagree or a task's state lies outside what
	// training covered. "" means DefaultGuard; "none" serves every
	// decision of the model as it is.
	Guard string
	// GuardMinAgreement is the share of the ensemble's members that must
	// choose the model's priority for it to stand. 0 means
	// guard.DefaultMinAgreement; a negative value never guards on
	// agreement (out-of-range states only). A single network always agrees.
	GuardMinAgreement float64
	// GuardIgnoreRange keeps the model's decision for a state outside the
	// feature ranges of its training (by default the guard decides those).
	GuardIgnoreRange bool
	// GuardKeepUrgentMs: a task whose SLA is under it is never sent to the
	// background by the model while the guard's controller admits it and
	// it can still meet its SLA (guard.Config.KeepUrgentMs). 0 means
	// guard.DefaultKeepUrgentMs; a negative value turns the rule off.
	GuardKeepUrgentMs float64
	// GuardMinAdvantage: the model's priority stands only where its mean
	// Q-value beats that of the controller's level by at least this much
	// (guard.Config.MinAdvantage). 0 means guard.DefaultMinAdvantage; a
	// negative value turns the rule off.
	GuardMinAdvantage float64

	// NoEBPF turns every eBPF probe off: the node signals come from procfs
	// alone (as on a kernel without BTF or without the capabilities).
	NoEBPF bool
	// ProbeCPUStats measures the probes' in-kernel CPU time
	// (triage_probe_cpu_seconds_total) with the kernel's BPF run-time
	// accounting, which costs two clock reads per program run.
	ProbeCPUStats bool
	// Signals replaces the node-signal source (an embedder's collector with
	// watched cgroups or ports); the agent closes it. nil starts a collector
	// with every probe this kernel supports.
	Signals NodeSignals

	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultAdminAddr     = ":9090"
	DefaultStateDir      = "/var/lib/triage"
	DefaultMaxBatch      = 512
	DefaultTaskTimeout   = 30 * time.Second
	DefaultMaxPending    = 65536
	DefaultStateInterval = 100 * time.Millisecond
	DefaultFGInterval    = time.Minute
	// DefaultGuard is the guard's controller (guard.DefaultController).
	DefaultGuard = guard.DefaultController
	// GuardNone turns the guard off.
	GuardNone   = guard.None
	disabledDir = "-"
)

// ErrBadConfig reports a Config that cannot run.
var ErrBadConfig = errors.New("agent: bad config")

// positiveOr is v, or def where v is zero or negative: a setting left
// unset (or below any sense) takes its default.
func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (c Config) withDefaults() (Config, error) {
	if c.AdminAddr == "" {
		c.AdminAddr = DefaultAdminAddr
	}
	c.ModelWatchInterval = positiveOr(c.ModelWatchInterval, time.Second)
	c.MaxBatch = positiveOr(c.MaxBatch, DefaultMaxBatch)
	c.Workers = positiveOr(c.Workers, runtime.NumCPU())
	c.CPUs = positiveOr(c.CPUs, runtime.NumCPU())
	c.TaskTimeout = positiveOr(c.TaskTimeout, DefaultTaskTimeout)
	c.MaxPending = positiveOr(c.MaxPending, DefaultMaxPending)
	c.StateInterval = positiveOr(c.StateInterval, DefaultStateInterval)
	c.TableInterval = positiveOr(c.TableInterval, DefaultTableInterval)
	c.TableMaxCells = positiveOr(c.TableMaxCells, DefaultTableMaxCells)
	if c.TableMaxCells > wire.MaxTableCells {
		return c, fmt.Errorf("%w: decision table of %d cells: clients refuse a table of more than %d", ErrBadConfig, c.TableMaxCells, wire.MaxTableCells)
	}
	for _, l := range []struct {
		name string
		v    int
	}{{"connections", c.MaxConns}, {"connections per address", c.MaxConnsPerIP}, {"new connections a second per address", c.MaxNewConnsPerIP}, {"streams per connection", c.MaxStreamsPerConn}} {
		if l.v < 0 {
			return c, fmt.Errorf("%w: a limit of %d %s: want 0 (the default) or more", ErrBadConfig, l.v, l.name)
		}
	}
	c.FlamegraphInterval = positiveOr(c.FlamegraphInterval, DefaultFGInterval)
	if _, err := profiling.ParseUnwindMode(c.FlamegraphUnwind); err != nil {
		return c, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if c.MaxProcs < 0 || c.WindowMaxProcs < 0 {
		return c, fmt.Errorf("%w: GOMAXPROCS of %d, %d during windows", ErrBadConfig, c.MaxProcs, c.WindowMaxProcs)
	}
	if c.Nice < -20 || c.Nice > 19 {
		return c, fmt.Errorf("%w: niceness %d, want -20 to 19", ErrBadConfig, c.Nice)
	}
	if c.SchedSlice != 0 && (c.SchedSlice < MinSchedSlice || c.SchedSlice > MaxSchedSlice) {
		return c, fmt.Errorf("%w: scheduling slice %v, want 0 (the kernel's) or %v to %v", ErrBadConfig, c.SchedSlice, MinSchedSlice, MaxSchedSlice)
	}
	if c.MallocMmapThreshold < 0 || c.MallocMmapThreshold > policy.MaxCHeapMmapThreshold {
		return c, fmt.Errorf("%w: malloc mmap threshold of %d bytes, want 0 (glibc's own) to %d", ErrBadConfig, c.MallocMmapThreshold, policy.MaxCHeapMmapThreshold)
	}
	if c.GoMemoryLimit < 0 {
		return c, fmt.Errorf("%w: Go memory limit of %d bytes", ErrBadConfig, c.GoMemoryLimit)
	}
	if c.FlamegraphCacheBytes < 0 {
		return c, fmt.Errorf("%w: flame-graph cache of %d bytes", ErrBadConfig, c.FlamegraphCacheBytes)
	}
	if c.FlamegraphCacheBytes == 0 {
		c.FlamegraphCacheBytes = flamegraph.DefaultMaxCacheBytes
	}
	if c.BatchWindow < 0 || c.BatchWindow > 10*time.Millisecond {
		return c, fmt.Errorf("%w: batch window %v must be within 0..10ms (it adds to every decision's latency)", ErrBadConfig, c.BatchWindow)
	}
	if c.Guard == "" {
		c.Guard = DefaultGuard
	}
	if c.Guard != GuardNone && !slices.Contains(control.GuardNames, c.Guard) {
		return c, fmt.Errorf("%w: guard %q: want one of %v or %q", ErrBadConfig, c.Guard, control.GuardNames, GuardNone)
	}
	switch {
	case c.GuardMinAgreement == 0:
		c.GuardMinAgreement = guard.DefaultMinAgreement
	case c.GuardMinAgreement < 0:
		c.GuardMinAgreement = 0 // never below: agreement is a share, at least 0
	case c.GuardMinAgreement > 1 || math.IsNaN(c.GuardMinAgreement):
		return c, fmt.Errorf("%w: guard minimum agreement %v: want a share in (0, 1], or a negative value to never guard on agreement", ErrBadConfig, c.GuardMinAgreement)
	}
	if err := defaultOrOff(&c.GuardKeepUrgentMs, guard.DefaultKeepUrgentMs, "guard urgent threshold (ms)"); err != nil {
		return c, err
	}
	if err := defaultOrOff(&c.GuardMinAdvantage, guard.DefaultMinAdvantage, "guard minimum advantage"); err != nil {
		return c, err
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return c, fmt.Errorf("%w: --tls-cert and --tls-key go together", ErrBadConfig)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.NodeName == "" {
		c.NodeName, _ = os.Hostname()
	}
	c.ExperienceDir = defaultDir(c.ExperienceDir, "experience", c.Logger)
	c.FlamegraphDir = defaultDir(c.FlamegraphDir, "flamegraphs", c.Logger)
	return c, nil
}

// defaultDir resolves a state directory: "-" is off, "" is the default
// under DefaultStateDir when it can be created (else off, with a warning,
// so an unprivileged `triage agent` still starts).
func defaultDir(dir, name string, log *slog.Logger) string {
	switch dir {
	case disabledDir:
		return ""
	case "":
		d := filepath.Join(DefaultStateDir, name)
		if err := os.MkdirAll(d, 0o750); err != nil {
			log.Warn("state directory unavailable; running without it", "dir", d, "err", err)
			return ""
		}
		return d
	}
	return dir
}

// defaultOrOff settles a guard rule's threshold: 0 is def, a negative value
// turns the rule off (0 to the guard), and NaN or an infinity is refused.
func defaultOrOff(v *float64, def float64, what string) error {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		*v = 0
	case math.IsNaN(*v) || math.IsInf(*v, 0):
		return fmt.Errorf("%w: %s %v: want a finite value, or a negative value for none", ErrBadConfig, what, *v)
	}
	return nil
}
