package calibrate

import (
	"context"
	"fmt"
	"time"

	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/train"
)

// MeasureDisk measures the disk levels of base again, on this machine now,
// and returns a copy of base with them in place of its own (the CPU levels
// and the idle node stay base's). cfg.IOLevels default to base's writer
// counts; Settle and Windows to DiskSettle and DiskWindows, shorter than a
// full calibration's because a bench pays for them before every run set.
//
// Why: the disk's own fsync time drifts by tens of percent between hours
// on a VM (the probe's uncontended write read 0.249 ms at 15:18 and 0.409
// ms at 18:30 on 2026-12-03, and the slowdowns at 8-16 writers moved with
// it), and the simulator stretches a task's I/O part by the calibration's
// ratios. A bench that compares real execution with the simulator must
// simulate the disk it ran on, measured when it ran (docs/calibration.md).
func MeasureDisk(ctx context.Context, cfg Config, base *train.Calibration) (*train.Calibration, error) {
	if base == nil {
		return nil, fmt.Errorf("calibrate: no calibration to measure the disk of")
	}
	if len(cfg.IOLevels) == 0 {
		for _, l := range base.IO {
			cfg.IOLevels = append(cfg.IOLevels, l.Writers)
		}
	}
	if cfg.IOLevels[0] != 0 {
		return nil, fmt.Errorf("%w: the disk's levels start at %d writers, not 0: every slowdown is a ratio to the uncontended write", train.ErrBadCalibration, cfg.IOLevels[0])
	}
	if cfg.Settle <= 0 {
		cfg.Settle = DiskSettle
	}
	if cfg.Windows <= 0 {
		cfg.Windows = DiskWindows
	}
	// The uncontended level is the unit bench e2e counts a task's I/O in,
	// which it measured on a settled disk before this existed: the bench
	// or build before leaves writeback that would fall on it.
	if _, _, err := proc.SettleDisk(proc.SettleQuietBytes, proc.SettleTimeout); err != nil {
		return nil, fmt.Errorf("calibrate: settling the disk: %w", err)
	}
	m, err := newMeasurer(cfg.withDefaults())
	if err != nil {
		return nil, err
	}
	defer m.col.Close()
	out := cloneCalibration(base)
	out.Machine.DiskMeasuredAt = time.Now().UTC().Format(time.RFC3339)
	if out.IO, err = measureEach(ctx, m.cfg.IOLevels, m.cfg.Progress, "io: %d writers beside the probe", m.ioLevel); err != nil {
		return nil, err
	}
	setSlowdowns(out.IO)
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("calibrate: the disk measured does not make a calibration: %w", err)
	}
	return &out, nil
}

// A bench's disk measurement: a second to settle and three windows per
// level, about 30 s for the seven default levels.
const (
	DiskSettle  = time.Second
	DiskWindows = 3
)

// setSlowdowns makes each level's slowdown its write time over the
// uncontended level's (io[0], writers 0).
func setSlowdowns(io []train.IOLevel) {
	for i := range io {
		io[i].Slowdown = io[i].WriteMs / io[0].WriteMs
	}
}
