package calibrate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-agent/triage/agent/signals"
	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/train"
)

// Config is one calibration run; the zero value of each field means its
// default.
type Config struct {
	// CPULevels are the runnable threads per CPU to measure (default
	// 0.25, 0.5, 1, 1.5, 2, 3, 4, 6, 8); IOLevels the fsync'd writers
	// beside the probe (default 0, 1, 2, 4, 8, 12, 16).
	CPULevels []float64
	IOLevels  []int
	// BurstyLevels are the bursty loads to measure (default
	// DefaultBurstyLevels): how threads that come and go read the run
	// queue.
	BurstyLevels []BurstyConfig
	// WakeLevels are the loads to measure waking jobs beside (default
	// DefaultWakeLevels): how long a thread that has just woken runs ahead
	// of the steady ones.
	WakeLevels []WakeConfig
	// IOCPULevels are the spinners per CPU to measure an fsync'd write
	// beside (default DefaultIOCPULevels; the first must be 0): how a
	// task's I/O part stretches on a busy CPU.
	IOCPULevels []float64
	// RunqIOLevels are the spinners and writers to read the run queue
	// beside (default DefaultRunqIOLevels; each spinners level's first
	// beside no writer): how writers dilute the run-queue percentiles.
	RunqIOLevels []RunqIOConfig
	// Settle is how long each level runs before it is read (default 2 s:
	// the agent's window is 1 s); Windows how many windows are read, one
	// a second (default 6).
	Settle  time.Duration
	Windows int
	// Dir is where the writers and the I/O probe write (default
	// os.TempDir()): a directory on the disk whose latency matters.
	Dir string
	// Nice of the load and the probes: the workers' nice in bench e2e
	// (default 10).
	Nice int
	// NoBPF reads every signal from procfs (an unprivileged run).
	NoBPF bool
	// Progress, when set, is told what is being measured.
	Progress func(string)
}

// Default levels: the range, with more points where the curves bend.
var (
	DefaultCPULevels = []float64{0.25, 0.5, 1, 1.5, 2, 3, 4, 6, 8}
	DefaultIOLevels  = []int{0, 1, 2, 4, 8, 12, 16}
)

func (c Config) withDefaults() Config {
	if len(c.CPULevels) == 0 {
		c.CPULevels = DefaultCPULevels
	}
	if len(c.IOLevels) == 0 {
		c.IOLevels = DefaultIOLevels
	}
	if len(c.BurstyLevels) == 0 {
		c.BurstyLevels = DefaultBurstyLevels
	}
	if len(c.WakeLevels) == 0 {
		c.WakeLevels = DefaultWakeLevels
	}
	if len(c.IOCPULevels) == 0 {
		c.IOCPULevels = DefaultIOCPULevels
	}
	if len(c.RunqIOLevels) == 0 {
		c.RunqIOLevels = DefaultRunqIOLevels
	}
	if c.Settle <= 0 {
		c.Settle = 2 * time.Second
	}
	if c.Windows <= 0 {
		c.Windows = 6
	}
	if c.Dir == "" {
		c.Dir = os.TempDir()
	}
	if c.Nice == 0 {
		c.Nice = 10
	}
	if c.Progress == nil {
		c.Progress = func(string) {}
	}
	return c
}

// writeBytes is the size of one fsync'd write, the scenario's io writers'.
const writeBytes = 64 << 10

// Run measures the machine and returns its calibration.
func Run(ctx context.Context, cfg Config) (*train.Calibration, error) {
	m, err := newMeasurer(cfg.withDefaults())
	if err != nil {
		return nil, err
	}
	defer m.col.Close()
	cfg = m.cfg
	cal := &train.Calibration{Schema: train.CalibrationSchema, Machine: m.machine()}

	cfg.Progress("idle")
	idle, err := m.level(ctx, proc.LoadConfig{}, nil)
	if err != nil {
		return nil, err
	}
	cal.Idle = train.IdleLevel{
		RunqP50Us: idle.median(idle.runqP50), RunqP99Us: idle.median(idle.runqP99),
		BlkioP99Us: zeroIfNaN(idle.median(idle.blkP99)), CPUUtil: idle.median(idle.util),
	}
	if cal.CPU, err = measureEach(ctx, cfg.CPULevels, cfg.Progress, "cpu: %g runnable threads per CPU", m.cpuLevel); err != nil {
		return nil, err
	}
	if cal.Bursty, err = measureEach(ctx, cfg.BurstyLevels, cfg.Progress, "bursty: %v", m.burstyLevel); err != nil {
		return nil, err
	}
	if err := m.measureWake(ctx, cal); err != nil {
		return nil, err
	}
	if cal.IO, err = measureEach(ctx, cfg.IOLevels, cfg.Progress, "io: %d writers beside the probe", m.ioLevel); err != nil {
		return nil, err
	}
	setSlowdowns(cal.IO)
	if err := m.measureIOCPU(ctx, cal); err != nil {
		return nil, err
	}
	if err := m.measureRunqIO(ctx, cal); err != nil {
		return nil, err
	}
	if err := cal.Validate(); err != nil {
		return nil, fmt.Errorf("calibrate: what was measured does not make a calibration: %w", err)
	}
	return cal, nil
}

// measureEach measures the levels in order, naming each on progress
// (format takes the level).
func measureEach[L, R any](ctx context.Context, levels []L, progress func(string), format string, measure func(context.Context, L) (R, error)) ([]R, error) {
	var out []R
	for _, l := range levels {
		progress(fmt.Sprintf(format, l))
		r, err := measure(ctx, l)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// newMeasurer starts the agent's signal sources for a measurement with cfg
// (its defaults applied); the caller closes m.col.
func newMeasurer(cfg Config) (*measurer, error) {
	var opts []signals.Option
	if cfg.NoBPF {
		opts = append(opts, signals.WithoutBPF())
	}
	col, err := signals.New(signals.Config{}, opts...)
	if err != nil {
		return nil, fmt.Errorf("calibrate: starting the signal sources: %w", err)
	}
	return &measurer{cfg: cfg, col: col, cpus: runtime.NumCPU()}, nil
}

type measurer struct {
	cfg  Config
	col  *signals.Collector
	cpus int
	snap signals.Snapshot
}

func (m *measurer) machine() train.MachineInfo {
	var u unix.Utsname
	_ = unix.Uname(&u)
	m.col.Snapshot(&m.snap)
	return train.MachineInfo{
		CPUs:       m.cpus,
		Kernel:     unix.ByteSliceToString(u.Release[:]),
		MeasuredAt: time.Now().UTC().Format(time.RFC3339),
		Sources: map[string]string{
			"runq":  string(m.snap.RunQueue.Source.Kind),
			"blkio": string(m.snap.Blkio.Source.Kind),
			"cpu":   string(m.snap.CPU.Source.Kind),
		},
		WriteBytes: writeBytes,
		WindowS:    m.col.Config().Window.Seconds(),
	}
}

// readings are one level's windows.
type readings struct {
	runqP50, runqP99, blkP99, util []float64
	probe                          []float64 // the probe's measurements
}

func (readings) median(xs []float64) float64 {
	var ok []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			ok = append(ok, x)
		}
	}
	if len(ok) == 0 {
		return math.NaN()
	}
	slices.Sort(ok)
	return policy.NearestRank(ok, 0.5)
}

// probeMean is the mean of the probe's measurements: a write's mean time,
// since a run of writes takes their count times it (a heavy tail included).
func (r *readings) probeMean() float64 {
	sum := 0.0
	for _, x := range r.probe {
		sum += x
	}
	return sum / float64(len(r.probe))
}

// logSigma is the standard deviation of the logs of the positive xs.
func logSigma(xs []float64) float64 {
	var ls []float64
	for _, x := range xs {
		if x > 0 && !math.IsInf(x, 0) {
			ls = append(ls, math.Log(x))
		}
	}
	if len(ls) < 2 {
		return 0
	}
	mean := 0.0
	for _, l := range ls {
		mean += l
	}
	mean /= float64(len(ls))
	v := 0.0
	for _, l := range ls {
		v += (l - mean) * (l - mean)
	}
	return math.Sqrt(v / float64(len(ls)-1))
}

// level runs lc and the probe (nil: none), lets them settle, reads the
// signals once a second, and stops them.
func (m *measurer) level(ctx context.Context, lc proc.LoadConfig, probe func(stop <-chan struct{}) ([]float64, error)) (*readings, error) {
	lc.Nice, lc.Dir, lc.Name = m.cfg.Nice, m.cfg.Dir, "calibrate"
	g, err := proc.StartLoad(lc)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer g.Close()
	stop := make(chan struct{})
	type result struct {
		xs  []float64
		err error
	}
	done := make(chan result, 1)
	if probe != nil {
		go func() { xs, err := probe(stop); done <- result{xs, err} }()
	} else {
		done <- result{}
	}
	r := &readings{}
	wait := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	err = wait(m.cfg.Settle)
	for i := 0; i < m.cfg.Windows && err == nil; i++ {
		if err = wait(time.Second); err != nil {
			break
		}
		m.col.Snapshot(&m.snap)
		s := &m.snap
		r.runqP50 = append(r.runqP50, float64(s.RunQueue.Latency.P50Us))
		r.runqP99 = append(r.runqP99, float64(s.RunQueue.Latency.P99Us))
		r.blkP99 = append(r.blkP99, float64(s.Blkio.Latency.P99Us))
		r.util = append(r.util, float64(s.CPU.Util))
	}
	close(stop)
	res := <-done
	r.probe = res.xs
	if err := errors.Join(err, res.err, g.Close()); err != nil {
		return nil, err
	}
	return r, nil
}

// cpuLevel measures perCPU runnable threads per CPU: the probe is one of
// them; the spinners are the rest (a fraction is a spinner runnable part
// of the time). Below one thread in all, the probe alone runs part time.
func (m *measurer) cpuLevel(ctx context.Context, perCPU float64) (train.CPULevel, error) {
	threads := perCPU * float64(m.cpus)
	p := cpuProbe{nice: m.cfg.Nice, duty: math.Min(1, threads), jobCPU: 5 * time.Millisecond}
	r, err := m.level(ctx, proc.LoadConfig{Spinners: math.Max(0, threads-1)}, p.run)
	if err != nil {
		return train.CPULevel{}, err
	}
	if len(r.probe) == 0 {
		return train.CPULevel{}, fmt.Errorf("calibrate: the CPU probe finished no job at %g threads per CPU", perCPU)
	}
	return train.CPULevel{
		ThreadsPerCPU: perCPU,
		RunqP50Us:     r.median(r.runqP50), RunqP99Us: r.median(r.runqP99),
		RunqP50Sigma: logSigma(r.runqP50), RunqP99Sigma: logSigma(r.runqP99),
		CPUUtil:  r.median(r.util),
		Slowdown: r.median(r.probe),
	}, nil
}

// ioLevel measures writers fsync'ing writers beside the probe.
func (m *measurer) ioLevel(ctx context.Context, writers int) (train.IOLevel, error) {
	p := ioProbe{dir: m.cfg.Dir, size: writeBytes}
	r, err := m.level(ctx, proc.LoadConfig{Writers: writers, WriteBytes: writeBytes}, p.run)
	if err != nil {
		return train.IOLevel{}, err
	}
	if len(r.probe) == 0 {
		return train.IOLevel{}, fmt.Errorf("calibrate: the I/O probe finished no write with %d writers", writers)
	}
	return train.IOLevel{
		Writers:       writers,
		BlkioP99Us:    zeroIfNaN(r.median(r.blkP99)),
		BlkioP99Sigma: logSigma(r.blkP99),
		WriteMs:       r.probeMean(),
		CPUUtil:       r.median(r.util),
	}, nil
}

func zeroIfNaN(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// cloneCalibration is a copy of base that shares none of its slices or
// maps, for a measurement that replaces some of its levels and keeps the
// rest.
func cloneCalibration(base *train.Calibration) train.Calibration {
	out := *base
	out.CPU, out.IO, out.Bursty, out.Wake = slices.Clone(base.CPU), slices.Clone(base.IO), slices.Clone(base.Bursty), slices.Clone(base.Wake)
	out.IOCPU, out.RunqIO = slices.Clone(base.IOCPU), slices.Clone(base.RunqIO)
	out.Machine.Sources = maps.Clone(base.Machine.Sources)
	return out
}
