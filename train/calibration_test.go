package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultCalibrationIsValid(t *testing.T) {
	c := DefaultCalibration()
	if c.Machine.CPUs < 1 || len(c.CPU) < 2 || len(c.IO) < 2 {
		t.Fatalf("default calibration: %+v", c.Machine)
	}
}

func TestCalibrationRefusals(t *testing.T) {
	good, err := json.Marshal(DefaultCalibration())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseCalibration(good); err != nil {
		t.Fatalf("a re-encoded default refused: %v", err)
	}
	other := strings.Replace(string(good), CalibrationSchema, "triage.calibration.v0", 1)
	cases := map[string]struct{ src, want string }{
		"truncated":      {string(good[:len(good)/2]), "truncated"},
		"another schema": {other, `schema "triage.calibration.v0", this build reads "triage.calibration.v1"`},
		"unknown field":  {strings.Replace(string(good), `"idle":`, `"idel":{},"idle":`, 1), "unknown field"},
		"empty":          {"", "truncated"},
		"trailing":       {string(good) + "{}", "trailing data"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseCalibration([]byte(c.src))
			if !errors.Is(err, ErrBadCalibration) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrBadCalibration saying %q", err, c.want)
			}
		})
	}
	// LoadCalibration names the file.
	p := filepath.Join(t.TempDir(), "cal.json")
	if err := os.WriteFile(p, good[:10], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCalibration(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("LoadCalibration of a truncated file: %v", err)
	}
}

func TestCalibrationLevelsMustIncrease(t *testing.T) {
	c := DefaultCalibration()
	c.CPU[1].ThreadsPerCPU = c.CPU[0].ThreadsPerCPU
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "cpu[1]: threads_per_cpu must increase") {
		t.Fatalf("got %v", err)
	}
}

func TestCalibrationInterpolates(t *testing.T) {
	c := DefaultCalibration()
	prev := c.CPUAt(0)
	for _, l := range []float64{0.1, 0.5, 1, 1.7, 2.5, 5, 8, 12, 20} {
		cur := c.CPUAt(l)
		if cur.Slowdown < prev.Slowdown-1e-9 {
			t.Errorf("slowdown falls from %v to %v at load %v", prev.Slowdown, cur.Slowdown, l)
		}
		prev = cur
	}
	last := c.CPU[len(c.CPU)-1]
	if got := c.CPUAt(2 * last.ThreadsPerCPU).Slowdown; got < 1.99*last.Slowdown {
		t.Errorf("twice the last level's load: slowdown %v, want about %v", got, 2*last.Slowdown)
	}
	for _, l := range c.CPU {
		if got := c.CPUAt(l.ThreadsPerCPU); got.RunqP99Us != l.RunqP99Us || got.Slowdown != l.Slowdown {
			t.Errorf("at a measured level %v: %+v, want %+v", l.ThreadsPerCPU, got, l)
		}
	}
	if got := c.IOAt(0); got.Slowdown != c.IO[0].Slowdown {
		t.Errorf("IOAt(0) = %+v", got)
	}
}

// The simulator's signals at each calibrated load are the measured ones:
// its median within 15% of the measured median, and its slowdown the
// measured slowdown. A change to the signal synthesis that drifts from the
// calibration (another window, a unit slip) fails here.
func TestSimulatedSignalsFollowTheCalibration(t *testing.T) {
	cal := DefaultCalibration()
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.15*want {
			t.Errorf("%s: simulated median %.1f, measured %.1f", what, got, want)
		}
	}
	for _, l := range cal.CPU {
		s := SimulateCPULevel(cal, l.ThreadsPerCPU, 400, 1)
		near(fmt.Sprintf("runq p50 at %.2f threads/CPU", l.ThreadsPerCPU), s.RunqP50Us.P50, l.RunqP50Us)
		near(fmt.Sprintf("runq p99 at %.2f threads/CPU", l.ThreadsPerCPU), s.RunqP99Us.P50, l.RunqP99Us)
		// Never below the fair share (nodeModel.cpuSlowdown): where the
		// probe measured less, the simulation keeps the share.
		near(fmt.Sprintf("slowdown at %.2f threads/CPU", l.ThreadsPerCPU), s.Slowdown, max(l.Slowdown, l.ThreadsPerCPU))
		if !(s.RunqP99Us.P10 <= s.RunqP99Us.P50 && s.RunqP99Us.P50 <= s.RunqP99Us.P90) {
			t.Errorf("spread out of order at %.2f: %+v", l.ThreadsPerCPU, s.RunqP99Us)
		}
	}
	for _, l := range cal.IO {
		s := SimulateIOLevel(cal, l.Writers, 400, 1)
		near(fmt.Sprintf("block-I/O p99 at %d writers", l.Writers), s.BlkioP99Us.P50, l.BlkioP99Us)
		near(fmt.Sprintf("I/O slowdown at %d writers", l.Writers), s.Slowdown, l.Slowdown)
	}
}
