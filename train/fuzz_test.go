package train

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// addFiles seeds f with every file matching pattern.
func addFiles(f *testing.F, pattern string) {
	f.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seed files %s: %v", pattern, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// parsedAndRoundTripped parses b: a refusal must wrap sentinel (nil is
// returned), and what parses must parse again once written back as JSON.
func parsedAndRoundTripped[T any](t *testing.T, parse func([]byte) (*T, error), sentinel error, b []byte) *T {
	t.Helper()
	v, err := parse(b)
	if err != nil {
		if !errors.Is(err, sentinel) {
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		return nil
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshalling a valid %T: %v", v, err)
	}
	if _, err := parse(again); err != nil {
		t.Fatalf("a valid %T, written and read back, is refused: %v\n%s", v, err, again)
	}
	return v
}

// FuzzParseScenario: a scenario file, whatever its bytes, is refused with
// ErrBadScenario or is a scenario that validates again after a JSON round
// trip; a small one generates arrivals inside its duration, of its
// classes, with finite positive costs.
func FuzzParseScenario(f *testing.F) {
	addFiles(f, "../testdata/scenarios/*.json")
	addFiles(f, "../testdata/validation/*.json")
	addFiles(f, "testdata/malformed.json")
	f.Add([]byte(`{"name":"x","duration_s":1,"workers":1,"arrival":{"process":"poisson","rate_per_s":5},"classes":[{"name":"a","share":1,"sla_ms":10,"cost_ms":{"dist":"fixed","value":1}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sc := parsedAndRoundTripped(t, ParseScenario, ErrBadScenario, b)
		if sc == nil {
			return
		}
		if sc.Arrival.maxRate()*sc.DurationS > 2000 {
			return // generating is the simulator's cost, not the parser's
		}
		for _, task := range sc.Arrivals(1) {
			switch {
			case task.ArrivalMs < 0 || task.ArrivalMs > sc.DurationS*1000:
				t.Fatalf("arrival at %v ms in a %v s scenario", task.ArrivalMs, sc.DurationS)
			case task.Class < 0 || task.Class >= len(sc.Classes):
				t.Fatalf("arrival of class %d of %d", task.Class, len(sc.Classes))
			case !(task.CostMs > 0) || math.IsInf(task.CostMs, 0) || !(task.ExpectedMs > 0) || math.IsInf(task.ExpectedMs, 0):
				t.Fatalf("arrival with cost %v (expected %v)", task.CostMs, task.ExpectedMs)
			}
		}
	})
}

// FuzzParseCalibration: a calibration file is refused with
// ErrBadCalibration or is one that validates again after a JSON round
// trip and interpolates to finite, non-negative levels at any load.
func FuzzParseCalibration(f *testing.F) {
	addFiles(f, "calibration/*.json")
	f.Add([]byte(`{"schema":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := parsedAndRoundTripped(t, ParseCalibration, ErrBadCalibration, b)
		if c == nil {
			return
		}
		for _, load := range []float64{0, 0.3, 1, 2.5, 8, 100} {
			l := c.CPUAt(load)
			for _, v := range []float64{l.RunqP50Us, l.RunqP99Us, l.RunqP50Sigma, l.RunqP99Sigma, l.CPUUtil, l.Slowdown} {
				if !(v >= 0) || math.IsInf(v, 0) {
					t.Fatalf("CPUAt(%v) = %+v", load, l)
				}
			}
			io := c.IOAt(load)
			for _, v := range []float64{io.BlkioP99Us, io.BlkioP99Sigma, io.WriteMs, io.Slowdown} {
				if !(v >= 0) || math.IsInf(v, 0) {
					t.Fatalf("IOAt(%v) = %+v", load, io)
				}
			}
		}
	})
}
