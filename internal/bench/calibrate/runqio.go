package calibrate

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/train"
)

// RunqIOConfig is one cell of the run queue's grid: spinners per CPU beside
// fsync'ing writers (train.RunqIOLevel).
type RunqIOConfig struct {
	SpinnersPerCPU float64
	Writers        int
}

func (l RunqIOConfig) String() string {
	return fmt.Sprintf("%g spinners per CPU beside %d writers", l.SpinnersPerCPU, l.Writers)
}

// DefaultRunqIOLevels is the grid the run queue is read at beside writers:
// no spinner, half the CPUs busy, every CPU, two per CPU; each beside no
// writer (the threads alone), one (where the dilution is deepest), four
// and eight (where writers queue among themselves again and raise it).
var DefaultRunqIOLevels = runqIOGrid([]float64{0, 0.5, 1, 2}, []int{0, 1, 4, 8})

// runqIOGrid is every spinners level beside every writers level, in the
// order train.RunqIOLevel rows take.
func runqIOGrid(spinners []float64, writers []int) []RunqIOConfig {
	var out []RunqIOConfig
	for _, s := range spinners {
		for _, w := range writers {
			out = append(out, RunqIOConfig{s, w})
		}
	}
	return out
}

// runqIOLevel reads the run queue beside l's spinners and writers, at the
// workers' nice, with no probe.
func (m *measurer) runqIOLevel(ctx context.Context, l RunqIOConfig) (train.RunqIOLevel, error) {
	r, err := m.level(ctx, proc.LoadConfig{Spinners: l.SpinnersPerCPU * float64(m.cpus), Writers: l.Writers, WriteBytes: writeBytes}, nil)
	if err != nil {
		return train.RunqIOLevel{}, err
	}
	p50, p99 := r.median(r.runqP50), r.median(r.runqP99)
	if math.IsNaN(p50) || math.IsNaN(p99) {
		return train.RunqIOLevel{}, fmt.Errorf("calibrate: the run queue read nothing beside %v", l)
	}
	// A percentile under the histogram's first bucket reads as that
	// bucket: the rows are divided by one another.
	p50, p99 = max(p50, minRunqUs), max(p99, minRunqUs)
	return train.RunqIOLevel{SpinnersPerCPU: l.SpinnersPerCPU, Writers: l.Writers, RunqP50Us: p50, RunqP99Us: p99}, nil
}

// measureRunqIO measures cfg.RunqIOLevels into cal's RunqIO rows.
func (m *measurer) measureRunqIO(ctx context.Context, cal *train.Calibration) error {
	rows, err := measureEach(ctx, m.cfg.RunqIOLevels, m.cfg.Progress, "run queue beside writers: %v", m.runqIOLevel)
	if err != nil {
		return err
	}
	cal.RunqIO = rows
	cal.Machine.RunqIOMeasuredAt = time.Now().UTC().Format(time.RFC3339)
	return nil
}

// minRunqUs is the least run-queue percentile a row holds (µs).
const minRunqUs = 1
