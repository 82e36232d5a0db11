package train

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"sort"
)

// CalibrationSchema names the layout of a calibration file. A file of
// another schema is refused rather than guessed at.
const CalibrationSchema = "triage.calibration.v1"

// ErrBadCalibration wraps every reason a calibration file is refused.
var ErrBadCalibration = errors.New("bad calibration")

// maxCalibrationBytes bounds what LoadCalibration reads: a calibration is
// a few kilobytes.
const maxCalibrationBytes = 1 << 20

// Calibration is what `triage calibrate` measured on a real kernel: how the
// agent's own signal sources read, and how much real CPU work and real
// fsync'd I/O slow down, at controlled levels of CPU and disk contention.
// The simulator draws its kernel features and its tasks' slowdowns from it,
// so what a policy learns to read is what the agent reads on a real node.
type Calibration struct {
	Schema  string      `json:"schema"`
	Machine MachineInfo `json:"machine"`
	// Idle is the node with no load from the calibration.
	Idle IdleLevel `json:"idle"`
	// CPU rows are in increasing ThreadsPerCPU, IO rows in increasing Writers.
	CPU []CPULevel `json:"cpu"`
	IO  []IOLevel  `json:"io"`
	// Bursty rows, when measured, say how threads that come and go read
	// the run queue (calibration_bursty.go); a calibration written before
	// them has none and the simulator takes the default fit.
	Bursty []BurstyLevel `json:"bursty,omitempty"`
	// Wake rows are jobs of a fixed CPU time run by a thread that sleeps
	// between them, beside steady spinners, and WakeCreditMs the credit
	// fitted to them (FitWakeCredit): the CPU time a thread that has just
	// woken runs ahead of the threads that have used their share
	// (WakeCredit). Both absent in a calibration written before they were
	// measured.
	Wake         []WakeLevel `json:"wake,omitempty"`
	WakeCreditMs float64     `json:"wake_credit_ms,omitempty"`
	// IOCPU rows are fsync'd writes beside CPU spinners
	// (calibration_iocpu.go): how a task's I/O part stretches on a busy
	// CPU. Absent in a calibration written before they were measured, whose
	// I/O parts stretch with the disk's writers alone.
	IOCPU []IOCPULevel `json:"io_cpu,omitempty"`
	// RunqIO rows are the run queue read beside spinners and writers
	// (calibration_runqio.go): how writers dilute the run-queue
	// percentiles. Absent in a calibration written before they were
	// measured, whose writers leave the run queue as the spinners put it.
	RunqIO []RunqIOLevel `json:"runq_io,omitempty"`
}

// WakeLevel is one waking job measured: JobMs of CPU time after a sleep,
// beside SpinnersPerCPU steady spinners per CPU; Slowdown is its wall time
// over its CPU time (the median job), ShareSlowdown a long job's at the
// same level: the share of the CPU a thread gets once its credit is spent.
type WakeLevel struct {
	SpinnersPerCPU float64 `json:"spinners_per_cpu"`
	JobMs          float64 `json:"job_ms"`
	Slowdown       float64 `json:"slowdown"`
	ShareSlowdown  float64 `json:"share_slowdown"`
}

// FitWakeCredit is the wake credit (ms) the waking jobs say: each job of J
// ms read slowdown s where a long one read f, so it ran C ms at once and
// the rest at f, C = J (f − s) / (f − 1), within [0, J]; the median over
// the jobs whose level slows a long job by at least 5% (else nothing is
// learnt). 0 when none can say it.
func FitWakeCredit(levels []WakeLevel) float64 {
	var cs []float64
	for _, l := range levels {
		f, s, j := l.ShareSlowdown, l.Slowdown, l.JobMs
		if !(f >= 1.05) || !(s > 0) || !(j > 0) || !finite(f) || !finite(s) {
			continue
		}
		cs = append(cs, math.Max(0, math.Min(j, j*(f-s)/(f-1))))
	}
	if len(cs) == 0 {
		return 0
	}
	sort.Float64s(cs)
	n := len(cs)
	if n%2 == 1 {
		return cs[n/2]
	}
	return (cs[n/2-1] + cs[n/2]) / 2
}

// DefaultWakeCreditMs is WakeCredit where the calibration has none: what
// a waking probe beside spinners measured on the development VM, where
// jobs of 1 ms ran unslowed beside 2 to 6 spinners and jobs of 2 and 5 ms
// fitted a credit of about 1 ms (docs/calibration.md, "Short tasks under
// CPU contention").
const DefaultWakeCreditMs = 1.0

// WakeCredit is the CPU time (ms) a waking thread runs ahead of the
// threads that have used their share: c.WakeCreditMs, or
// DefaultWakeCreditMs where the calibration does not say.
func (c *Calibration) WakeCredit() float64 {
	if c.WakeCreditMs > 0 {
		return c.WakeCreditMs
	}
	return DefaultWakeCreditMs
}

// MachineInfo says where and how a calibration was measured.
type MachineInfo struct {
	CPUs       int    `json:"cpus"`
	Kernel     string `json:"kernel"`
	MeasuredAt string `json:"measured_at"`
	// DiskMeasuredAt, when set, is when the disk levels (IO) were measured
	// again on their own (`triage bench e2e` measures the disk it runs on):
	// the CPU levels and the idle node are then MeasuredAt's.
	DiskMeasuredAt string `json:"disk_measured_at,omitempty"`
	// SchedulerMeasuredAt, when set, is when the scheduler's levels (the
	// bursty levels and the waking jobs) were measured on their own
	// (`triage calibrate --scheduler-of`), added to a calibration measured
	// before they existed.
	SchedulerMeasuredAt string `json:"scheduler_measured_at,omitempty"`
	// IOCPUMeasuredAt, when set, is when the writes beside spinners
	// (IOCPU) were measured, where that was not with the rest.
	IOCPUMeasuredAt string `json:"io_cpu_measured_at,omitempty"`
	// RunqIOMeasuredAt, when set, is when the run queue beside spinners
	// and writers (RunqIO) was measured, where that was not with the rest.
	RunqIOMeasuredAt string `json:"runq_io_measured_at,omitempty"`
	// Sources names the source of each signal ("ebpf", "procfs", ...), as
	// the agent reported it during the measurement.
	Sources map[string]string `json:"sources"`
	// WriteBytes is the size of one fsync'd write (64 KiB, as the
	// scenario's io writers).
	WriteBytes int `json:"write_bytes"`
	// WindowS is the span of each measured percentile (the agent's window).
	WindowS float64 `json:"window_s"`
}

// IdleLevel is the node at rest.
type IdleLevel struct {
	RunqP50Us  float64 `json:"runq_p50_us"`
	RunqP99Us  float64 `json:"runq_p99_us"`
	BlkioP99Us float64 `json:"blkio_p99_us"` // 0: no block I/O completed in the window
	CPUUtil    float64 `json:"cpu_util"`
}

// CPULevel is one level of CPU contention: ThreadsPerCPU always-runnable
// threads per CPU (the probe that measures the slowdown among them).
type CPULevel struct {
	ThreadsPerCPU float64 `json:"threads_per_cpu"`
	RunqP50Us     float64 `json:"runq_p50_us"`
	RunqP99Us     float64 `json:"runq_p99_us"`
	// Sigmas are the standard deviations of the log of each window's value
	// at this level: the noise the simulator draws.
	RunqP50Sigma float64 `json:"runq_p50_sigma"`
	RunqP99Sigma float64 `json:"runq_p99_sigma"`
	CPUUtil      float64 `json:"cpu_util"`
	// Slowdown is the wall time of a fixed amount of CPU work divided by
	// its CPU time: how much longer a task's CPU part takes at this level.
	Slowdown float64 `json:"slowdown"`
}

// IOLevel is one level of disk contention: Writers fsync'd writers beside
// the probe that measures the slowdown.
type IOLevel struct {
	Writers       int     `json:"writers"`
	BlkioP99Us    float64 `json:"blkio_p99_us"`
	BlkioP99Sigma float64 `json:"blkio_p99_sigma"`
	// WriteMs is the mean time of the probe's write+fsync of WriteBytes.
	WriteMs float64 `json:"write_ms"`
	// Slowdown is WriteMs over the uncontended level's (Writers 0).
	Slowdown float64 `json:"slowdown"`
	// CPUUtil is the node's CPU utilisation (0..1, all CPUs) while the
	// Writers+1 writers (the probe is one) ran: their own CPU and the
	// kernel's work for them (journal commits, block completions). 0 in
	// a calibration written before it was measured: writers then cost the
	// simulated CPUs nothing.
	CPUUtil float64 `json:"cpu_util,omitempty"`
}

//go:embed calibration/default.json
var defaultCalibration []byte

// DefaultCalibration is the calibration committed with the project,
// measured by `triage calibrate` on the development machine
// (docs/calibration.md).
func DefaultCalibration() *Calibration {
	c, err := ParseCalibration(defaultCalibration)
	if err != nil {
		panic("train: the embedded default calibration is invalid: " + err.Error())
	}
	return c
}

// LoadCalibration reads and validates a calibration file.
func LoadCalibration(path string) (*Calibration, error) {
	return loadFile(path, "calibration", maxCalibrationBytes, ParseCalibration)
}

// ParseCalibration decodes a calibration strictly and validates it.
func ParseCalibration(b []byte) (*Calibration, error) {
	c, err := parseValid[Calibration](b, maxCalibrationBytes, ErrBadCalibration)
	if err != nil {
		return nil, err
	}
	c.monotone()
	return c, nil
}

// monotone makes each slowdown at least the one of the level below it:
// more contention never speeds a task up, so a measured dip (0.9998 after
// 1.0003 on an idle pair of CPUs) is noise, and a simulated task must not
// get faster as neighbours start.
func (c *Calibration) monotone() {
	for i := 1; i < len(c.CPU); i++ {
		c.CPU[i].Slowdown = max(c.CPU[i].Slowdown, c.CPU[i-1].Slowdown)
	}
	for i := 1; i < len(c.IO); i++ {
		c.IO[i].Slowdown = max(c.IO[i].Slowdown, c.IO[i-1].Slowdown)
	}
	for i := 1; i < len(c.IOCPU); i++ {
		c.IOCPU[i].Slowdown = max(c.IOCPU[i].Slowdown, c.IOCPU[i-1].Slowdown)
	}
}

func badCal(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadCalibration}, args...)...)
}

// Validate checks the schema and that the tables can be interpolated.
func (c *Calibration) Validate() error {
	if c.Schema != CalibrationSchema {
		return badCal("schema %q, this build reads %q", c.Schema, CalibrationSchema)
	}
	if c.Machine.CPUs < 1 {
		return badCal("machine.cpus must be at least 1, got %d", c.Machine.CPUs)
	}
	if len(c.CPU) < 2 {
		return badCal("cpu: %d levels, need at least 2", len(c.CPU))
	}
	if len(c.IO) < 2 {
		return badCal("io: %d levels, need at least 2", len(c.IO))
	}
	nonneg := func(name string, vs ...float64) error {
		for _, v := range vs {
			if !finite(v) || v < 0 {
				return badCal("%s must be a non-negative number, got %v", name, v)
			}
		}
		return nil
	}
	if err := nonneg("idle", c.Idle.RunqP50Us, c.Idle.RunqP99Us, c.Idle.BlkioP99Us, c.Idle.CPUUtil); err != nil {
		return err
	}
	for i, l := range c.CPU {
		name := fmt.Sprintf("cpu[%d]", i)
		if err := nonneg(name, l.RunqP50Us, l.RunqP99Us, l.RunqP50Sigma, l.RunqP99Sigma, l.CPUUtil); err != nil {
			return err
		}
		if !finite(l.ThreadsPerCPU) || l.ThreadsPerCPU <= 0 {
			return badCal("%s.threads_per_cpu must be positive, got %v", name, l.ThreadsPerCPU)
		}
		if i > 0 && l.ThreadsPerCPU <= c.CPU[i-1].ThreadsPerCPU {
			return badCal("%s: threads_per_cpu must increase", name)
		}
		if !finite(l.Slowdown) || l.Slowdown < 0.5 {
			return badCal("%s.slowdown must be at least 0.5, got %v", name, l.Slowdown)
		}
	}
	for i, l := range c.IO {
		name := fmt.Sprintf("io[%d]", i)
		if err := nonneg(name, l.BlkioP99Us, l.BlkioP99Sigma, l.WriteMs); err != nil {
			return err
		}
		if l.Writers < 0 || (i > 0 && l.Writers <= c.IO[i-1].Writers) {
			return badCal("%s: writers must be non-negative and increase, got %d", name, l.Writers)
		}
		if !finite(l.Slowdown) || l.Slowdown < 0.5 {
			return badCal("%s.slowdown must be at least 0.5, got %v", name, l.Slowdown)
		}
	}
	if c.IO[0].Writers != 0 || c.IO[0].WriteMs <= 0 {
		return badCal("io[0] must be the uncontended level (writers 0) with a positive write_ms")
	}
	if !finite(c.WakeCreditMs) || c.WakeCreditMs < 0 || c.WakeCreditMs > maxWakeCreditMs {
		return badCal("wake_credit_ms must be in [0, %v], got %v", maxWakeCreditMs, c.WakeCreditMs)
	}
	for i, l := range c.Wake {
		for _, v := range []float64{l.SpinnersPerCPU, l.JobMs, l.Slowdown, l.ShareSlowdown} {
			if !finite(v) || v <= 0 {
				return badCal("wake[%d]: spinners, job and slowdowns must be positive numbers, got %v", i, v)
			}
		}
	}
	if err := c.validateIOCPU(); err != nil {
		return err
	}
	if err := c.validateRunqIO(); err != nil {
		return err
	}
	return c.validateBursty()
}

// maxWakeCreditMs bounds a calibration's wake credit: a scheduler gives a
// waking thread milliseconds, not more.
const maxWakeCreditMs = 100.0

// CPUAt is the CPU level at load threads-per-CPU, interpolated: latencies
// log-log between measured levels (run-queue latency grows by orders of
// magnitude), slowdown and utilisation linearly. Below the first level it
// blends towards Idle; above the last, latency and slowdown grow in
// proportion to the load (a fair scheduler's share shrinks as 1/load).
func (c *Calibration) CPUAt(load float64) CPULevel {
	lv := c.CPU
	first, last := lv[0], lv[len(lv)-1]
	switch {
	case !(load > 0):
		return CPULevel{RunqP50Us: c.Idle.RunqP50Us, RunqP99Us: c.Idle.RunqP99Us,
			RunqP50Sigma: first.RunqP50Sigma, RunqP99Sigma: first.RunqP99Sigma, CPUUtil: c.Idle.CPUUtil, Slowdown: 1}
	case load < first.ThreadsPerCPU:
		f := load / first.ThreadsPerCPU
		out := first
		out.ThreadsPerCPU = load
		out.RunqP50Us = lerp(c.Idle.RunqP50Us, first.RunqP50Us, f)
		out.RunqP99Us = lerp(c.Idle.RunqP99Us, first.RunqP99Us, f)
		out.CPUUtil = lerp(c.Idle.CPUUtil, first.CPUUtil, f)
		out.Slowdown = lerp(1, first.Slowdown, f)
		return out
	case load >= last.ThreadsPerCPU:
		f := load / last.ThreadsPerCPU
		out := last
		out.ThreadsPerCPU = load
		out.RunqP50Us *= f
		out.RunqP99Us *= f
		out.Slowdown *= f
		return out
	}
	i := sort.Search(len(lv), func(i int) bool { return lv[i].ThreadsPerCPU >= load })
	if lv[i].ThreadsPerCPU == load {
		return lv[i]
	}
	a, b := lv[i-1], lv[i]
	f := (load - a.ThreadsPerCPU) / (b.ThreadsPerCPU - a.ThreadsPerCPU)
	fl := math.Log(load/a.ThreadsPerCPU) / math.Log(b.ThreadsPerCPU/a.ThreadsPerCPU)
	return CPULevel{
		ThreadsPerCPU: load,
		RunqP50Us:     logLerp(a.RunqP50Us, b.RunqP50Us, fl),
		RunqP99Us:     logLerp(a.RunqP99Us, b.RunqP99Us, fl),
		RunqP50Sigma:  lerp(a.RunqP50Sigma, b.RunqP50Sigma, f),
		RunqP99Sigma:  lerp(a.RunqP99Sigma, b.RunqP99Sigma, f),
		CPUUtil:       lerp(a.CPUUtil, b.CPUUtil, f),
		Slowdown:      lerp(a.Slowdown, b.Slowdown, f),
	}
}

// IOAt is the disk level with writers concurrent fsync'd writers besides
// the one asking (fractional counts interpolate; above the last level the
// slowdown and latency grow in proportion to the writers sharing the disk).
func (c *Calibration) IOAt(writers float64) IOLevel {
	lv := c.IO
	last := lv[len(lv)-1]
	if writers <= 0 {
		return lv[0]
	}
	if writers >= float64(last.Writers) {
		f := (writers + 1) / float64(last.Writers+1)
		out := last
		out.BlkioP99Us *= f
		out.WriteMs *= f
		out.Slowdown *= f
		return out
	}
	i := sort.Search(len(lv), func(i int) bool { return float64(lv[i].Writers) >= writers })
	if float64(lv[i].Writers) == writers {
		return lv[i]
	}
	a, b := lv[i-1], lv[i]
	f := (writers - float64(a.Writers)) / float64(b.Writers-a.Writers)
	return IOLevel{
		BlkioP99Us:    logLerp(a.BlkioP99Us, b.BlkioP99Us, f),
		BlkioP99Sigma: lerp(a.BlkioP99Sigma, b.BlkioP99Sigma, f),
		WriteMs:       lerp(a.WriteMs, b.WriteMs, f),
		Slowdown:      lerp(a.Slowdown, b.Slowdown, f),
		CPUUtil:       lerp(a.CPUUtil, b.CPUUtil, f),
	}
}

// WriterThreads is the CPU that writers fsync'ing writers on the disk keep
// busy, in always-runnable threads: what their CPU utilisation measured
// above the idle node's, times the calibrated machine's CPUs. It is CPU
// time, so it is the same on a node of another size. The utilisation of a
// level counts its probe too (Writers+1 writers), and a count between two
// levels is interpolated; past the last level it grows in proportion.
func (c *Calibration) WriterThreads(writers float64) float64 {
	if writers <= 0 || len(c.IO) == 0 {
		return 0
	}
	perLevel := func(l IOLevel) float64 {
		if l.CPUUtil <= 0 {
			return 0
		}
		return max(0, l.CPUUtil-c.Idle.CPUUtil) * float64(c.Machine.CPUs)
	}
	last := c.IO[len(c.IO)-1]
	if writers >= float64(last.Writers+1) {
		return perLevel(last) * writers / float64(last.Writers+1)
	}
	if writers <= 1 {
		return perLevel(c.IO[0]) * writers
	}
	return perLevel(c.IOAt(writers - 1)) // the level of writers−1 beside the probe
}

func lerp(a, b, f float64) float64 { return a + (b-a)*f }

// logLerp interpolates between positive a and b in log space; a zero end
// falls back to linear.
func logLerp(a, b, f float64) float64 {
	if a <= 0 || b <= 0 {
		return lerp(a, b, f)
	}
	return a * math.Pow(b/a, f)
}
