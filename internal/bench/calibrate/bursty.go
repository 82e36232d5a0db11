package calibrate

import (
	"context"
	"fmt"
	"time"

	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/train"
)

// BurstyConfig is one bursty level to measure: ThreadsPerCPU bursty
// spinners per CPU (rounded to whole processes), each runnable Duty of the
// time in bursts of BurstMs.
type BurstyConfig struct {
	ThreadsPerCPU float64
	Duty          float64
	BurstMs       float64
}

// DefaultBurstyLevels are the levels of docs/calibration.md's "Bursty
// threads and the run queue": two threads per CPU, busy a quarter and 40%
// of the time (a mean of 0.5 and 0.8 threads per CPU), in 5 ms bursts.
// Two per CPU is the fewest that outnumber the CPUs often at such means.
var DefaultBurstyLevels = []BurstyConfig{{2, 0.25, 5}, {2, 0.4, 5}}

// burstyLevel measures one bursty level: the run queue it reads, and the
// share of the time it outnumbers the CPUs (from its threads and duty).
func (m *measurer) burstyLevel(ctx context.Context, b BurstyConfig) (train.BurstyLevel, error) {
	threads := max(1, int(b.ThreadsPerCPU*float64(m.cpus)+0.5))
	r, err := m.level(ctx, proc.LoadConfig{Bursty: threads, BurstyDuty: b.Duty, BurstMs: b.BurstMs}, nil)
	if err != nil {
		return train.BurstyLevel{}, err
	}
	share, load := train.Oversubscription(threads, b.Duty, m.cpus)
	return train.BurstyLevel{
		Threads: threads, Duty: b.Duty, BurstMs: b.BurstMs,
		OversubscribedShare: share, OversubscribedLoad: load,
		RunqP99Us: zeroIfNaN(r.median(r.runqP99)), RunqP99Sigma: logSigma(r.runqP99),
		CPUUtil: zeroIfNaN(r.median(r.util)),
	}, nil
}

func (b BurstyConfig) String() string {
	return fmt.Sprintf("%g threads per CPU busy %g of the time in %g ms bursts", b.ThreadsPerCPU, b.Duty, b.BurstMs)
}

// MeasureScheduler measures the scheduler's levels, the bursty ones
// (cfg.BurstyLevels, default DefaultBurstyLevels), the waking jobs
// (cfg.WakeLevels, default DefaultWakeLevels), the writes beside
// spinners (cfg.IOCPULevels, default DefaultIOCPULevels) and the run
// queue beside spinners and writers (cfg.RunqIOLevels, default
// DefaultRunqIOLevels), on this machine
// now, and returns a copy of base with them and the credit fitted to the
// jobs in place of its own; the steady levels, the disk and the idle node stay
// base's. It is how a calibration written before they existed gains them
// without measuring the rest again.
func MeasureScheduler(ctx context.Context, cfg Config, base *train.Calibration) (*train.Calibration, error) {
	if base == nil {
		return nil, fmt.Errorf("calibrate: no calibration to add the scheduler's levels to")
	}
	m, err := newMeasurer(cfg.withDefaults())
	if err != nil {
		return nil, err
	}
	defer m.col.Close()
	if base.Machine.CPUs != m.cpus {
		return nil, fmt.Errorf("%w: the base was measured on %d CPUs, this machine has %d", train.ErrBadCalibration, base.Machine.CPUs, m.cpus)
	}
	out := cloneCalibration(base)
	out.Machine.SchedulerMeasuredAt = time.Now().UTC().Format(time.RFC3339)
	if out.Bursty, err = measureEach(ctx, m.cfg.BurstyLevels, m.cfg.Progress, "bursty: %v", m.burstyLevel); err != nil {
		return nil, err
	}
	if err := m.measureWake(ctx, &out); err != nil {
		return nil, err
	}
	if err := m.measureIOCPU(ctx, &out); err != nil {
		return nil, err
	}
	if err := m.measureRunqIO(ctx, &out); err != nil {
		return nil, err
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("calibrate: the scheduler's levels measured do not make a calibration: %w", err)
	}
	return &out, nil
}
