package signals

import (
	"time"

	"github.com/triage-agent/triage/bpf"
)

// Probe names, for Config.Disable and ProbeStatus.Name.
const (
	ProbeRunqlat  = "runqlat"
	ProbeAccept   = "accept"
	ProbeBlkio    = "blkio"
	ProbeSyscalls = "syscalls"
	ProbeTCPStat  = "tcpstat"
)

// DefaultInterval is how often the collector samples its sources.
const DefaultInterval = 500 * time.Millisecond

// Config configures a Collector. The zero value means: every probe this
// kernel supports, auto tier, 1 s window sampled every 500 ms, the agent's
// own pid for the schedstat fallback, every listening socket.
type Config struct {
	DisableBPF bool // procfs only (tests, unprivileged runs)
	// RunqSampleEvery times one run-queue enqueue in N per CPU (power of
	// two; 0 = all): less kernel cost per context switch, fewer samples.
	RunqSampleEvery uint32
	Disable         []string // probe names to leave out (their signal falls back)
	Tier            bpf.Tier // force one attach tier for every probe

	Window   time.Duration // span of percentiles and rates; default 1 s
	Interval time.Duration // sampling period of the BPF histograms; default 500 ms
	// SlowInterval is the period of the reads that cost more than a map
	// lookup: procfs counter files, the accept-queue socket walk, PSI.
	// Default: the window (1 s), so rates still cover a full window.
	SlowInterval time.Duration
	// AcceptInterval is the period of the accept-queue read. The iter/tcp
	// walk visits every bucket of the TCP hash tables (~1 ms with 256k
	// buckets), so it runs less often than the rest. Default 2 s.
	AcceptInterval time.Duration

	WatchPIDs    []int    // syscall latency filter; schedstat fallback pids
	WatchCgroups []string // cgroup v2 directories: run-queue and syscall latency
	WatchPorts   []uint16 // listening ports for the accept queue; none = all

	// AcceptMaxBacklog is the listen backlog assumed on the procfs path,
	// where the real one is not visible; 0 reads net.core.somaxconn.
	AcceptMaxBacklog uint32

	// ProbeCPUStats turns on the kernel's BPF run-time accounting
	// (kernel.bpf_stats_enabled) while the collector runs, and reports each
	// probe's in-kernel CPU time (ProbeStatus.CPUSeconds). It costs two
	// clock reads per program run, so it is off by default.
	ProbeCPUStats bool

	// noSockDiag skips the netlink fallback (tests of the /proc/net/tcp path).
	noSockDiag bool
}

// Option adjusts a Config.
type Option func(*Config)

// WithoutBPF runs every signal from procfs.
func WithoutBPF() Option { return func(c *Config) { c.DisableBPF = true } }

// WithoutProbe leaves one probe out (ProbeRunqlat, ProbeAccept, ...).
func WithoutProbe(name string) Option {
	return func(c *Config) { c.Disable = append(c.Disable, name) }
}

// WithTier forces the attach tier of every tracepoint probe.
func WithTier(t bpf.Tier) Option { return func(c *Config) { c.Tier = t } }

// WithWindow sets the percentile window.
func WithWindow(d time.Duration) Option { return func(c *Config) { c.Window = d } }

// WithInterval sets the sampling period.
func WithInterval(d time.Duration) Option { return func(c *Config) { c.Interval = d } }

// WithWatchPIDs adds processes to the watched set.
func WithWatchPIDs(pids ...int) Option {
	return func(c *Config) { c.WatchPIDs = append(c.WatchPIDs, pids...) }
}

// WithWatchCgroups adds cgroup v2 directories to the watched set.
func WithWatchCgroups(paths ...string) Option {
	return func(c *Config) { c.WatchCgroups = append(c.WatchCgroups, paths...) }
}

// WithWatchPorts adds listening ports to the accept-queue watch.
func WithWatchPorts(ports ...uint16) Option {
	return func(c *Config) { c.WatchPorts = append(c.WatchPorts, ports...) }
}

func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.SlowInterval <= 0 {
		c.SlowInterval = c.Window
	}
	if c.AcceptInterval <= 0 {
		c.AcceptInterval = 2 * time.Second
	}
	if c.SlowInterval < c.Interval {
		c.SlowInterval = c.Interval
	}
	if c.Interval < 10*time.Millisecond {
		c.Interval = 10 * time.Millisecond // sampling faster buys nothing and costs CPU
	}
	return c
}

func (c *Config) disabled(name string) bool {
	for _, d := range c.Disable {
		if d == name {
			return true
		}
	}
	return false
}

func (c *Config) slowInterval() time.Duration { return c.SlowInterval }
