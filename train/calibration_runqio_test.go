package train

import (
	"math"
	"strings"
	"testing"
)

// runqIOGrid is two spinners levels of the grid measured on this machine
// (docs/calibration.md, "The run queue under writers"): beside 0.8
// spinners per CPU one writer takes the p99 from 4 ms to 32 µs, four to
// 337 µs; beside 2 per CPU they leave it in milliseconds.
var runqIOGrid = []RunqIOLevel{
	{0.8, 0, 4, 3988}, {0.8, 1, 2, 32}, {0.8, 4, 4, 337},
	{2, 0, 12, 7488}, {2, 1, 3, 2827}, {2, 4, 6, 2487},
}

// From one writer on the rows' values are read, log-linear between them
// and held past the last writers and spinners measured; under one writer
// the logs go from the value alone to the first writers row's; without
// writers or without rows the value alone is kept.
func TestRunqBesideWritersInterpolates(t *testing.T) {
	c := &Calibration{RunqIO: runqIOGrid}
	const alone = 5000.0
	for _, x := range []struct{ perCPU, writers, want float64 }{
		{0.8, 0, alone},
		{0.8, 1, 32},
		{0.8, 4, 337},
		{0.8, 16, 337},                    // held past the last writers
		{0.8, 2.5, math.Sqrt(32 * 337)},   // half-way between writers rows, in the logs
		{0.8, 0.5, math.Sqrt(alone * 32)}, // half-way to one writer
		{0.2, 1, 32},                      // below the first spinners level: its rows
		{6, 4, 2487},                      // above the last: its
		{1.4, 1, math.Sqrt(32 * 2827)},    // half-way between levels
		{1.4, 0.25, math.Exp(0.75*math.Log(alone) + 0.25*math.Log(math.Sqrt(32*2827)))},
		{math.NaN(), 1, alone},
		{1, math.NaN(), alone},
		{1, -1, alone},
	} {
		if got := c.RunqBesideWriters(x.perCPU, x.writers, alone, true); math.Abs(got-x.want) > 1e-9*x.want {
			t.Errorf("RunqBesideWriters(%v, %v, p99) = %v, want %v", x.perCPU, x.writers, got, x.want)
		}
	}
	if got := c.RunqBesideWriters(2, 1, 9, false); math.Abs(got-3) > 1e-9 {
		t.Errorf("p50 beside a writer at 2 per CPU: %v, want the row's 3", got)
	}
	if got := (&Calibration{}).RunqBesideWriters(1, 4, alone, true); got != alone {
		t.Errorf("without rows: %v, want %v", got, alone)
	}
	lone := &Calibration{RunqIO: []RunqIOLevel{{1, 0, 2, 30}}} // a level Validate refuses
	if got := lone.RunqBesideWriters(1, 4, alone, true); got != alone {
		t.Errorf("a level without its writers rows: %v, want %v", got, alone)
	}
	// The simulator reads the rows at every tick: reading them allocates
	// nothing.
	if n := testing.AllocsPerRun(100, func() { c.RunqBesideWriters(1.4, 2, alone, true) }); n != 0 {
		t.Errorf("RunqBesideWriters allocates %v times a call", n)
	}
}

// Rows that cannot be read as factors from a level's row without writers
// are refused with the row named.
func TestRunqIORowsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		rows []RunqIOLevel
		want string
	}{
		{"level without its writers-0 row", []RunqIOLevel{{1, 1, 2, 30}, {1, 4, 4, 300}}, "runq_io[0]: each spinners level must start with writers 0"},
		{"level alone", []RunqIOLevel{{1, 0, 2, 30}, {2, 0, 4, 300}, {2, 1, 4, 30}}, "runq_io[0]: a spinners level needs a row with writers"},
		{"writers not increasing", []RunqIOLevel{{1, 0, 2, 30}, {1, 4, 4, 300}, {1, 4, 4, 30}}, "runq_io[2]: writers must increase"},
		{"spinners decreasing", []RunqIOLevel{{2, 0, 2, 30}, {2, 1, 4, 300}, {1, 0, 4, 30}, {1, 1, 4, 30}}, "runq_io[2]: spinners_per_cpu must not decrease"},
		{"no p99", []RunqIOLevel{{1, 0, 2, 0}, {1, 1, 4, 30}}, "runq_io[0]: runq_p50_us and runq_p99_us must be positive"},
		{"not a number", []RunqIOLevel{{1, 0, 2, 30}, {math.NaN(), 1, 4, 30}}, "runq_io[1]: spinners_per_cpu must be a non-negative number"},
		{"levels of other writers", []RunqIOLevel{{1, 0, 2, 30}, {1, 1, 4, 30}, {2, 0, 2, 30}, {2, 4, 4, 30}}, "spinners level 2 reads writers unlike level 1"},
	} {
		cal := DefaultCalibration()
		cal.RunqIO = c.rows
		if err := cal.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	cal := DefaultCalibration()
	cal.RunqIO = runqIOGrid
	if err := cal.Validate(); err != nil {
		t.Errorf("the measured grid: %v", err)
	}
}

// The simulated run queue reads the writers' dilution: three of the
// executor's tasks in their CPU parts on two CPUs read a lower run-queue
// p99 beside eight writers than alone, as a real node does, and the same
// with a calibration measured before the rows.
func TestWritersDiluteTheRunQueue(t *testing.T) {
	sc := nodeScenario(t, 2)
	p99 := func(cal *Calibration, atMs float64) float64 {
		n := newNodeModel(sc, cal)
		n.set(0, 3, 0, atMs)
		g := newSignals(sc, cal, n, 1, 0, 0)
		g.lastT = atMs
		g.advance(atMs + 1_000)
		return g.win.runq99.RunqP99Us
	}
	cal := DefaultCalibration()
	alone, beside := p99(cal, 5_000), p99(cal, 44_000) // 8 neighbour writers over [40, 50) s
	t.Logf("alone %.0f µs, beside 8 writers %.0f µs", alone, beside)
	if !(beside < alone/2) {
		t.Errorf("run-queue p99 beside 8 writers %.0f µs, alone %.0f µs: want the writers to dilute it", beside, alone)
	}
	old := DefaultCalibration()
	old.RunqIO = nil
	if a, b := p99(old, 5_000), p99(old, 44_000); a != b || a != alone {
		t.Errorf("without the rows: %.0f µs alone, %.0f beside the writers, want both %.0f", a, b, alone)
	}
}
