package calibrate

import (
	"context"
	"fmt"
	"time"

	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/train"
)

// WakeConfig is one load to measure waking jobs beside: SpinnersPerCPU
// steady spinners per CPU, and the jobs' CPU times (ms).
type WakeConfig struct {
	SpinnersPerCPU float64
	JobsMs         []float64
}

// DefaultWakeLevels: one and two spinners per CPU, jobs of 2 and 5 ms:
// shorter than 1 ms a job fits in the credit and says only that it is
// longer (docs/calibration.md, "Short tasks under CPU contention").
var DefaultWakeLevels = []WakeConfig{{1, []float64{2, 5}}, {2, []float64{2, 5}}}

const (
	// wakeShareJobMs is the long job that reads a level's share of the
	// CPU: twenty times a credit of a millisecond.
	wakeShareJobMs = 20
	// wakeDuty is how much of the time the waking probe works: it sleeps
	// between jobs, as a worker waits for its next task.
	wakeDuty = 0.3
)

// wakeLevel measures the jobs of w beside its spinners, and the long job
// that says what a thread gets once its credit is spent.
func (m *measurer) wakeLevel(ctx context.Context, w WakeConfig) ([]train.WakeLevel, error) {
	spinners := w.SpinnersPerCPU * float64(m.cpus)
	job := func(ms float64) (float64, error) {
		p := cpuProbe{nice: m.cfg.Nice, duty: wakeDuty, jobCPU: time.Duration(ms * float64(time.Millisecond))}
		r, err := m.level(ctx, proc.LoadConfig{Spinners: spinners}, p.run)
		if err != nil {
			return 0, err
		}
		if len(r.probe) == 0 {
			return 0, fmt.Errorf("calibrate: the waking probe finished no %g ms job beside %g spinners", ms, spinners)
		}
		return r.median(r.probe), nil
	}
	share, err := job(wakeShareJobMs)
	if err != nil {
		return nil, err
	}
	var out []train.WakeLevel
	for _, ms := range w.JobsMs {
		s, err := job(ms)
		if err != nil {
			return nil, err
		}
		out = append(out, train.WakeLevel{SpinnersPerCPU: w.SpinnersPerCPU, JobMs: ms, Slowdown: s, ShareSlowdown: share})
	}
	return out, nil
}

func (w WakeConfig) String() string {
	return fmt.Sprintf("jobs of %v ms after a sleep beside %g spinners per CPU", w.JobsMs, w.SpinnersPerCPU)
}

// measureWake measures cfg.WakeLevels into cal's Wake rows and its fitted
// credit.
func (m *measurer) measureWake(ctx context.Context, cal *train.Calibration) error {
	cal.Wake = nil
	for _, w := range m.cfg.WakeLevels {
		m.cfg.Progress("wake: " + w.String())
		rows, err := m.wakeLevel(ctx, w)
		if err != nil {
			return err
		}
		cal.Wake = append(cal.Wake, rows...)
	}
	cal.WakeCreditMs = train.FitWakeCredit(cal.Wake)
	return nil
}
