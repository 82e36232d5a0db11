package signals

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"
)

// ErrClosed is returned by methods of a closed Collector.
var ErrClosed = errors.New("signals collector closed")

// errDisabled is the reason of a probe turned off by configuration.
var errDisabled = errors.New("disabled by configuration")

// Collector samples every signal source periodically and keeps the latest
// Snapshot. Probes that cannot attach are reported in the snapshot and
// their signals fall back; nothing a probe does stops the others.
type Collector struct {
	cfg Config

	mu     sync.Mutex
	runq   *runqSource
	accept *acceptSource
	blkio  *blkioSource
	sys    *syscallSource
	tcp    *tcpSource
	cpu    *cpuSource
	snap   Snapshot
	closed bool

	runStats    io.Closer // the kernel's BPF run-time accounting, with ProbeCPUStats
	runStatsErr error     // why it could not be turned on

	stop chan struct{}
	done chan struct{}
}

// New opens every probe cfg allows, takes a first sample and starts
// sampling every cfg.Interval until Close.
func New(cfg Config, opts ...Option) (*Collector, error) {
	for _, o := range opts {
		o(&cfg)
	}
	cfg = cfg.withDefaults()
	for _, p := range cfg.WatchPorts {
		if p == 0 {
			return nil, fmt.Errorf("watch port 0: %w", ErrBadConfig)
		}
	}
	why := func(name string) error {
		if cfg.DisableBPF || cfg.disabled(name) {
			return errDisabled
		}
		return nil
	}
	c := &Collector{
		cfg:    cfg,
		runq:   newRunqSource(&cfg, why(ProbeRunqlat)),
		accept: newAcceptSource(&cfg, why(ProbeAccept)),
		blkio:  newBlkioSource(&cfg, why(ProbeBlkio)),
		sys:    newSyscallSource(&cfg, why(ProbeSyscalls)),
		tcp:    newTCPSource(&cfg, why(ProbeTCPStat)),
		cpu:    newCPUSource(&cfg),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	// Loading the probes parsed the kernel's BTF (tens of MB, now garbage):
	// hand it back to the OS now rather than carrying it as RSS until the
	// runtime's scavenger gets to it.
	if !cfg.DisableBPF {
		debug.FreeOSMemory()
		if cfg.ProbeCPUStats {
			c.enableRunStats()
		}
	}
	c.Sample()
	go c.loop()
	return c, nil
}

// ErrBadConfig is returned by New for a Config it cannot use.
var ErrBadConfig = errors.New("bad signals config")

func (c *Collector) loop() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.Sample()
		}
	}
}

// Sample reads every source now and updates the snapshot. The loop calls
// it; tests and one-shot tools call it to avoid waiting for a tick.
func (c *Collector) Sample() {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.runq.sample(now)
	c.accept.sample(now)
	c.blkio.sample(now)
	c.sys.sample(now)
	c.tcp.sample(now)
	c.cpu.sample(now)

	s := &c.snap
	s.Time = now
	c.runq.fill(&s.RunQueue)
	c.accept.fill(&s.Accept)
	c.blkio.fill(&s.Blkio)
	c.sys.fill(&s.Syscall)
	c.tcp.fill(&s.TCP)
	c.cpu.fill(&s.CPU)
	if c.runStats != nil {
		c.fillProbeCPU()
	}
	s.Probes = append(s.Probes[:0], c.runq.status, c.accept.status, c.blkio.status, c.sys.status, c.tcp.status)
}

// ProbeCPUStats reports whether the probes' CPU time is measured
// (Config.ProbeCPUStats and the kernel allowed it), and why not.
func (c *Collector) ProbeCPUStats() (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runStats != nil, c.runStatsErr
}

// Snapshot copies the latest values into dst, reusing dst's slices.
func (c *Collector) Snapshot(dst *Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.snap.CopyTo(dst)
}

// Config is the effective configuration (defaults filled in).
func (c *Collector) Config() Config { return c.cfg }

// WatchPID adds a process to the syscall-latency filter.
func (c *Collector) WatchPID(pid int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return c.sys.watchPID(pid)
}

// WatchCgroup adds a cgroup v2 directory to the run-queue and syscall
// watches; it returns the first error but applies what it can.
func (c *Collector) WatchCgroup(path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return errors.Join(c.runq.watchCgroup(path, &c.cfg), c.sys.watchCgroup(path))
}

// Close stops sampling and detaches every probe. Safe to call twice.
func (c *Collector) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	close(c.stop)
	<-c.done
	c.runq.close()
	c.accept.close()
	c.blkio.close()
	c.sys.close()
	c.tcp.close()
	if c.runStats != nil {
		c.runStats.Close()
	}
	return nil
}
