package calibrate

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/triage-agent/triage/train"
)

// quickDisk is a disk measurement short enough for a test: two levels, one
// window each. It writes and fsyncs for real, in the test's directory.
func quickDisk(t *testing.T, levels ...int) Config {
	return Config{IOLevels: levels, Settle: 200 * time.Millisecond, Windows: 1, Dir: t.TempDir(), NoBPF: true}
}

func TestMeasureDiskKeepsTheCPULevelsAndMeasuresTheDisk(t *testing.T) {
	base := train.DefaultCalibration()
	before := *base
	before.IO = slices.Clone(base.IO)
	cal, err := MeasureDisk(context.Background(), quickDisk(t, 0, 2), base)
	if err != nil {
		t.Fatal(err)
	}
	if err := cal.Validate(); err != nil {
		t.Fatalf("the result does not validate: %v", err)
	}
	if !slices.Equal(cal.CPU, base.CPU) || cal.Idle != base.Idle {
		t.Errorf("the CPU levels or the idle node changed: they are the base's")
	}
	if len(cal.IO) != 2 || cal.IO[0].Writers != 0 || cal.IO[1].Writers != 2 {
		t.Fatalf("io levels %+v, want writers 0 and 2", cal.IO)
	}
	if cal.IO[0].WriteMs <= 0 || cal.IO[0].Slowdown != 1 || cal.IO[1].Slowdown != cal.IO[1].WriteMs/cal.IO[0].WriteMs {
		t.Errorf("io levels %+v: want a measured write and slowdowns over the uncontended one", cal.IO)
	}
	if cal.Machine.DiskMeasuredAt == "" || cal.Machine.MeasuredAt != base.Machine.MeasuredAt {
		t.Errorf("machine %+v: want the base's time and the disk's own", cal.Machine)
	}
	if !slices.Equal(base.IO, before.IO) || base.Machine.DiskMeasuredAt != "" {
		t.Error("the base calibration was changed")
	}
	t.Logf("uncontended write %.3f ms, 2 writers beside it %.3f ms (committed %.3f, %.3f)",
		cal.IO[0].WriteMs, cal.IO[1].WriteMs, base.IO[0].WriteMs, base.IOAt(2).WriteMs)
}

// By default the disk is measured at the base's writer counts.
func TestMeasureDiskDefaultsToTheBasesWriterCounts(t *testing.T) {
	base := train.DefaultCalibration()
	base.IO = base.IO[:2]
	cfg := quickDisk(t)
	cal, err := MeasureDisk(context.Background(), cfg, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.IO) != 2 || cal.IO[1].Writers != base.IO[1].Writers {
		t.Errorf("measured %+v, want the base's writer counts %d and %d", cal.IO, base.IO[0].Writers, base.IO[1].Writers)
	}
}

// Levels without the uncontended one make no calibration: every slowdown
// is a ratio to it.
func TestMeasureDiskRefusesLevelsWithoutTheUncontendedOne(t *testing.T) {
	_, err := MeasureDisk(context.Background(), quickDisk(t, 1, 2), train.DefaultCalibration())
	if !errors.Is(err, train.ErrBadCalibration) {
		t.Fatalf("got %v, want ErrBadCalibration", err)
	}
	if _, err := MeasureDisk(context.Background(), quickDisk(t, 0, 1), nil); err == nil {
		t.Fatal("no base calibration: want an error")
	}
}

// The writes beside spinners are read over the write without them, as the
// disk levels are.
func TestSetIOCPUSlowdowns(t *testing.T) {
	rows := []train.IOCPULevel{{SpinnersPerCPU: 0, WriteMs: 0.08}, {SpinnersPerCPU: 1, WriteMs: 0.1}}
	setIOCPUSlowdowns(rows)
	if rows[0].Slowdown != 1 || math.Abs(rows[1].Slowdown-1.25) > 1e-12 {
		t.Errorf("slowdowns %v and %v, want 1 and 1.25", rows[0].Slowdown, rows[1].Slowdown)
	}
}
