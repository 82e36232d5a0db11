package calibrate

import (
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/triage-agent/triage/train"
)

// MeasureScheduler measures bursty levels, waking jobs, writes beside
// spinners and the run queue beside spinners and writers for real
// (processes that spin and sleep, the run queue read through the agent's
// eBPF source; a probe that sleeps between jobs beside spinners; an
// fsync'd write beside spinners; spinners beside fsync'ing writers) and
// keeps the rest of the base.
func TestMeasureSchedulerAddsTheLevelsAndKeepsTheRest(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the run-queue latency is read through eBPF, which needs root")
	}
	base := train.DefaultCalibration()
	base.Machine.CPUs = runtime.NumCPU()
	before := slices.Clone(base.Bursty)
	cfg := Config{BurstyLevels: []BurstyConfig{{2, 0.4, 5}}, WakeLevels: []WakeConfig{{1, []float64{2}}}, IOCPULevels: []float64{0, 2}, RunqIOLevels: []RunqIOConfig{{0.8, 0}, {0.8, 1}}, Settle: 500 * time.Millisecond, Windows: 2, Dir: t.TempDir()}
	cal, err := MeasureScheduler(context.Background(), cfg, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.Bursty) != 1 {
		t.Fatalf("%d bursty levels, want 1", len(cal.Bursty))
	}
	b := cal.Bursty[0]
	share, load := train.Oversubscription(2*runtime.NumCPU(), 0.4, runtime.NumCPU())
	if b.Threads != 2*runtime.NumCPU() || b.OversubscribedShare != share || b.OversubscribedLoad != load {
		t.Errorf("level %+v: want %d threads, share %v, load %v", b, 2*runtime.NumCPU(), share, load)
	}
	if !(b.RunqP99Us > 0) || !(b.CPUUtil > 0) {
		t.Errorf("level %+v: want a run-queue p99 and a CPU utilisation read", b)
	}
	if !slices.Equal(cal.CPU, base.CPU) || !slices.Equal(cal.IO, base.IO) || cal.Idle != base.Idle {
		t.Error("the steady levels, the disk or the idle node changed: they are the base's")
	}
	if len(cal.Wake) != 1 || cal.Wake[0].JobMs != 2 || !(cal.Wake[0].Slowdown >= 0.9) || !(cal.Wake[0].ShareSlowdown > 1) {
		t.Errorf("waking jobs %+v: want one 2 ms job read beside a spinner per CPU, and a long job slowed", cal.Wake)
	}
	if cal.WakeCreditMs != train.FitWakeCredit(cal.Wake) {
		t.Errorf("wake credit %v, want the fit of the rows %v", cal.WakeCreditMs, train.FitWakeCredit(cal.Wake))
	}
	if len(cal.IOCPU) != 2 || cal.IOCPU[0].SpinnersPerCPU != 0 || cal.IOCPU[0].Slowdown != 1 || !(cal.IOCPU[1].WriteMs > 0) ||
		cal.IOCPU[1].Slowdown != cal.IOCPU[1].WriteMs/cal.IOCPU[0].WriteMs || cal.Machine.IOCPUMeasuredAt == "" {
		t.Errorf("writes beside spinners %+v (measured at %q): want a row without spinners at slowdown 1 and one at 2 per CPU over it", cal.IOCPU, cal.Machine.IOCPUMeasuredAt)
	}
	if len(cal.RunqIO) != 2 || cal.RunqIO[0] != (train.RunqIOLevel{SpinnersPerCPU: 0.8, RunqP50Us: cal.RunqIO[0].RunqP50Us, RunqP99Us: cal.RunqIO[0].RunqP99Us}) ||
		cal.RunqIO[1].Writers != 1 || !(cal.RunqIO[1].RunqP99Us >= minRunqUs) || cal.Machine.RunqIOMeasuredAt == "" {
		t.Errorf("run queue beside writers %+v (measured at %q): want 0.8 spinners per CPU beside no writer, then beside one", cal.RunqIO, cal.Machine.RunqIOMeasuredAt)
	}
	if cal.Machine.SchedulerMeasuredAt == "" || cal.Machine.MeasuredAt != base.Machine.MeasuredAt {
		t.Errorf("machine %+v: want the base's time and the scheduler's levels' own", cal.Machine)
	}
	if !slices.Equal(base.Bursty, before) {
		t.Error("the base calibration was changed")
	}
	t.Logf("%d threads busy 40%%: run-queue p99 %.0f µs (oversubscribed %.3f of the time at %.2f per CPU); a 2 ms waking job %.2f, a long one %.2f; a write beside 2 spinners per CPU %.2f; the run-queue p99 beside 0.8 spinners per CPU %.0f µs, with a writer %.0f µs", b.Threads, b.RunqP99Us, share, load, cal.Wake[0].Slowdown, cal.Wake[0].ShareSlowdown, cal.IOCPU[len(cal.IOCPU)-1].Slowdown, cal.RunqIO[0].RunqP99Us, cal.RunqIO[1].RunqP99Us)
}

func TestMeasureSchedulerRefusesAnotherMachinesCalibration(t *testing.T) {
	base := train.DefaultCalibration()
	base.Machine.CPUs = runtime.NumCPU() + 1
	if _, err := MeasureScheduler(context.Background(), Config{NoBPF: true}, base); !errors.Is(err, train.ErrBadCalibration) {
		t.Errorf("a base of %d CPUs on %d: %v, want ErrBadCalibration", base.Machine.CPUs, runtime.NumCPU(), err)
	}
	if _, err := MeasureScheduler(context.Background(), Config{NoBPF: true}, nil); err == nil {
		t.Error("no base: want an error")
	}
}
