package calibrate

import (
	"context"
	"fmt"
	"time"

	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/train"
)

// DefaultIOCPULevels are the spinners per CPU an fsync'd write is measured
// beside (train.IOCPULevel): none, half the CPUs busy, every CPU busy, two
// threads per CPU; the first is the row the others are divided by.
var DefaultIOCPULevels = []float64{0, 0.5, 1, 2}

// ioCPULevel measures the mean write and fsync of the I/O probe, at the
// workers' nice, beside perCPU steady spinners per CPU.
func (m *measurer) ioCPULevel(ctx context.Context, perCPU float64) (train.IOCPULevel, error) {
	p := ioProbe{dir: m.cfg.Dir, size: writeBytes, nice: m.cfg.Nice}
	r, err := m.level(ctx, proc.LoadConfig{Spinners: perCPU * float64(m.cpus)}, p.run)
	if err != nil {
		return train.IOCPULevel{}, err
	}
	if len(r.probe) == 0 {
		return train.IOCPULevel{}, fmt.Errorf("calibrate: the I/O probe finished no write beside %g spinners per CPU", perCPU)
	}
	return train.IOCPULevel{SpinnersPerCPU: perCPU, WriteMs: r.probeMean()}, nil
}

// measureIOCPU measures cfg.IOCPULevels into cal's IOCPU rows.
func (m *measurer) measureIOCPU(ctx context.Context, cal *train.Calibration) error {
	rows, err := measureEach(ctx, m.cfg.IOCPULevels, m.cfg.Progress, "io beside cpu: an fsync'd write beside %g spinners per CPU", m.ioCPULevel)
	if err != nil {
		return err
	}
	setIOCPUSlowdowns(rows)
	cal.IOCPU = rows
	cal.Machine.IOCPUMeasuredAt = time.Now().UTC().Format(time.RFC3339)
	return nil
}

// setIOCPUSlowdowns sets each row's Slowdown from its WriteMs over the
// first row's (the one without spinners), as setSlowdowns does for the
// disk levels.
func setIOCPUSlowdowns(rows []train.IOCPULevel) {
	if len(rows) == 0 || !(rows[0].WriteMs > 0) {
		return
	}
	for i := range rows {
		rows[i].Slowdown = rows[i].WriteMs / rows[0].WriteMs
	}
}
