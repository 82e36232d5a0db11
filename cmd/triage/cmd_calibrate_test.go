package main

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/triage-agent/triage/train"
)

// `triage calibrate --scheduler-of default` measures the bursty levels
// and the waking jobs for real and writes the embedded calibration with
// them: a file the simulator loads, its steady levels the embedded ones.
func TestCalibrateAddsTheSchedulersLevels(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the run-queue latency is read through eBPF, which needs root")
	}
	base := train.DefaultCalibration()
	if base.Machine.CPUs != runtime.NumCPU() {
		t.Skipf("the embedded calibration is of %d CPUs, this machine has %d: --scheduler-of refuses it (tested in internal/bench/calibrate)", base.Machine.CPUs, runtime.NumCPU())
	}
	out := filepath.Join(t.TempDir(), "cal.json")
	if err := runCalibrate([]string{"--scheduler-of", "default", "--quick", "--out", out}); err != nil {
		t.Fatal(err)
	}
	cal, err := train.LoadCalibration(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.Bursty) != 1 || !(cal.Bursty[0].RunqP99Us > 0) || cal.Machine.SchedulerMeasuredAt == "" {
		t.Errorf("bursty levels %+v (measured at %q): want the one quick level, read", cal.Bursty, cal.Machine.SchedulerMeasuredAt)
	}
	if len(cal.Wake) != 1 || cal.WakeCreditMs != train.FitWakeCredit(cal.Wake) {
		t.Errorf("waking jobs %+v, credit %v: want the one quick job and its fit", cal.Wake, cal.WakeCreditMs)
	}
	if !slices.Equal(cal.CPU, base.CPU) || !slices.Equal(cal.IO, base.IO) {
		t.Error("the steady levels or the disk changed: they are the embedded calibration's")
	}
	if err := runCalibrate([]string{"--scheduler-of", filepath.Join(t.TempDir(), "missing.json"), "--quick"}); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("a missing base: %v, want an error naming it", err)
	}
}

// `triage calibrate --compare` prints the bursty levels beside what the
// simulator reads for them, or says they were not measured.
func TestCalibrateCompareShowsTheBurstyLevels(t *testing.T) {
	var b strings.Builder
	cal := train.DefaultCalibration()
	writeCalibrationComparison(&b, cal)
	if !strings.Contains(b.String(), "Bursty threads (exponent") || strings.Count(b.String(), "\n| 4 | 0.") != len(cal.Bursty) {
		t.Errorf("the default calibration's comparison lacks its bursty rows:\n%s", b.String())
	}
	cal.Bursty = nil
	b.Reset()
	writeCalibrationComparison(&b, cal)
	if !strings.Contains(b.String(), "not measured in this calibration") {
		t.Errorf("without bursty levels the comparison does not say so:\n%s", b.String())
	}
}
