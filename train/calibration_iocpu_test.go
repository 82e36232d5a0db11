package train

import (
	"math"
	"strings"
	"testing"
)

// A write's stretch beside spinners is read between the measured rows,
// held at the last row past it, and 1 below the first row or without rows
// (a calibration measured before them).
func TestIOCPUSlowdownInterpolates(t *testing.T) {
	c := &Calibration{IOCPU: []IOCPULevel{{0, 0.1, 1}, {1, 0.12, 1.2}, {2, 0.16, 1.6}}}
	for _, x := range []struct{ perCPU, want float64 }{
		{math.NaN(), 1}, {-1, 1}, {0, 1}, {0.5, 1.1}, {1, 1.2}, {1.5, 1.4}, {2, 1.6}, {8, 1.6},
	} {
		if got := c.IOCPUSlowdown(x.perCPU); math.Abs(got-x.want) > 1e-12 {
			t.Errorf("IOCPUSlowdown(%v) = %v, want %v", x.perCPU, got, x.want)
		}
	}
	if got := (&Calibration{}).IOCPUSlowdown(4); got != 1 {
		t.Errorf("without rows: %v, want 1", got)
	}
}

// Rows that cannot be read as a stretch from the write without spinners
// are refused with the row named.
func TestIOCPURowsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		rows []IOCPULevel
		want string
	}{
		{"first row beside spinners", []IOCPULevel{{0.5, 0.1, 1}, {1, 0.1, 1}}, "io_cpu[0] must be the write without spinners"},
		{"first row not 1", []IOCPULevel{{0, 0.1, 1.1}}, "io_cpu[0] must be the write without spinners"},
		{"spinners not increasing", []IOCPULevel{{0, 0.1, 1}, {1, 0.1, 1}, {1, 0.2, 2}}, "io_cpu[2]: spinners_per_cpu must be non-negative and increase"},
		{"no write", []IOCPULevel{{0, 0, 1}}, "io_cpu[0]: write_ms and slowdown must be positive"},
		{"not a number", []IOCPULevel{{0, 0.1, 1}, {1, math.NaN(), 1}}, "io_cpu[1]: write_ms and slowdown must be positive"},
	} {
		cal := DefaultCalibration()
		cal.IOCPU = c.rows
		if err := cal.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if len(DefaultCalibration().IOCPU) < 2 {
		t.Error("the default calibration has no writes beside spinners")
	}
}

// A task's I/O part stretches on a busy CPU as the rows say: beside four
// spinning neighbours on two CPUs the I/O class takes longer than on the
// same node whose calibration did not measure it, the same arrivals.
func TestWritesWaitForABusyCPU(t *testing.T) {
	sc := nodeScenario(t, 2)
	svc := func(cal *Calibration) float64 {
		out, err := Run(sc, ReserveRule{}, SimConfig{Calibration: cal})
		if err != nil {
			t.Fatal(err)
		}
		m, n := meanOver(out, window{22, 39}, 1, func(o *Outcome) float64 { return o.ServiceMs() })
		if n < 20 {
			t.Fatalf("%d I/O tasks under the neighbour", n)
		}
		return m
	}
	with := DefaultCalibration()
	without := DefaultCalibration()
	without.IOCPU = nil
	w, wo := svc(with), svc(without)
	want := 1 + 0.5*(with.IOCPUSlowdown(2)-1)/2 // half the cost is I/O; at least half its stretch
	if w < wo*want {
		t.Errorf("I/O class beside 4 spinners: %.2f ms with the rows, %.2f ms without; want at least %.2fx", w, wo, want)
	}
	t.Logf("I/O class beside 4 spinners on 2 CPUs: %.2f ms with the rows, %.2f ms without", w, wo)
}
