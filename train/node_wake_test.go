package train

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// A task in its waking part shares the CPUs with the executor's other
// tasks only; the rest of the CPU work shares them with the spinners too.
// On a node without spinners the two are the same.
func TestAWakingTaskSharesTheCPUsWithTheExecutorOnly(t *testing.T) {
	cal := DefaultCalibration()
	sc := &Scenario{Workers: 4, Node: &Node{CPUs: 2}, DurationS: 10,
		Interference: []Episode{{Kind: InterferenceCPU, AtS: 5, ForS: 5, Threads: 4}}}
	n := newNodeModel(sc, cal)
	if n.wakeCreditMs != cal.WakeCredit() || n.wakeCreditMs <= 0 {
		t.Fatalf("wake credit %v, want the calibration's %v", n.wakeCreditMs, cal.WakeCredit())
	}
	n.set(1, 1, 0, 1000) // quiet: two tasks on two CPUs
	if n.wake.speed != 1 || n.cpu.speed != 1 {
		t.Errorf("quiet: speeds %v (waking) and %v (rest), want 1 and 1", n.wake.speed, n.cpu.speed)
	}
	n.set(1, 1, 0, 6000) // beside four spinners
	if n.wake.speed != 1 {
		t.Errorf("beside spinners the waking task runs at %v, want 1: it shares with the other task only", n.wake.speed)
	}
	if want := 1 / n.cpuSlowdown(6); math.Abs(n.cpu.speed-want) > 1e-12 || n.cpu.speed > 1.0/3 {
		t.Errorf("beside spinners the rest runs at %v, want %v (six threads on two CPUs)", n.cpu.speed, want)
	}
	n.set(3, 1, 0, 6000) // four tasks, three of them waking, beside spinners
	if want := 1 / n.cpuSlowdown(4); math.Abs(n.wake.speed-want) > 1e-12 {
		t.Errorf("three waking tasks beside a fourth: speed %v, want %v (four tasks on two CPUs)", n.wake.speed, want)
	}
	if v1 := newNodeModel(&Scenario{Workers: 4}, cal); v1.wakeCreditMs != 0 {
		t.Errorf("a scenario without a node has a wake credit of %v, want 0: its workers never contend", v1.wakeCreditMs)
	}
}

// Beside spinning neighbours a short task is hardly slowed and a long one
// is, as on the real node (docs/calibration.md, "Short tasks under CPU
// contention"); in the quiet periods nothing changes.
func TestSpinnersSlowLongTasksMoreThanShortOnes(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"wake","seed":4,"duration_s":40,"workers":4,"node":{"cpus":2},
	 "arrival":{"process":"poisson","rate_per_s":40},
	 "interference":[{"kind":"cpu","at_s":20,"for_s":20,"threads":4}],
	 "classes":[{"name":"short","share":0.7,"sla_ms":50,"cost_ms":{"dist":"constant","value":0.5}},
	            {"name":"long","share":0.3,"sla_ms":500,"cost_ms":{"dist":"constant","value":30}}]}`)
	out, err := Run(sc, ReserveRule{}, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	svc := func(o *Outcome) float64 { return o.ServiceMs() }
	quiet, spin := window{2, 19}, window{22, 39}
	sq, _ := meanOver(out, quiet, 0, svc)
	ss, n := meanOver(out, spin, 0, svc)
	lq, _ := meanOver(out, quiet, 1, svc)
	ls, m := meanOver(out, spin, 1, svc)
	if n < 20 || m < 20 {
		t.Fatalf("%d short and %d long tasks under the spinners", n, m)
	}
	if ss > 1.2*sq || ls < 2*lq {
		t.Errorf("beside 4 spinners: short tasks %.2f ms (quiet %.2f), long %.1f ms (quiet %.1f); want the short ones within 20%% and the long ones at least twice as slow", ss, sq, ls, lq)
	}
}

func TestWakeCreditComesFromTheCalibration(t *testing.T) {
	cal := DefaultCalibration()
	if len(cal.Wake) == 0 || cal.WakeCreditMs != FitWakeCredit(cal.Wake) || cal.WakeCredit() != cal.WakeCreditMs {
		t.Errorf("the default calibration's credit %v (field %v) from %d waking jobs: want the fit of its jobs, %v", cal.WakeCredit(), cal.WakeCreditMs, len(cal.Wake), FitWakeCredit(cal.Wake))
	}
	cal.WakeCreditMs = 0
	if cal.WakeCredit() != DefaultWakeCreditMs {
		t.Errorf("without a measured credit: %v, want the default %v", cal.WakeCredit(), DefaultWakeCreditMs)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1), 1e6} {
		cal.WakeCreditMs = bad
		if err := cal.Validate(); !errors.Is(err, ErrBadCalibration) || !strings.Contains(err.Error(), "wake_credit_ms") {
			t.Errorf("wake_credit_ms %v: %v, want ErrBadCalibration naming it", bad, err)
		}
	}
	cal = DefaultCalibration()
	cal.Wake = append(cal.Wake, WakeLevel{SpinnersPerCPU: 1, JobMs: math.NaN(), Slowdown: 1, ShareSlowdown: 2})
	if err := cal.Validate(); !errors.Is(err, ErrBadCalibration) || !strings.Contains(err.Error(), "wake[") {
		t.Errorf("a waking job of NaN ms: %v, want ErrBadCalibration naming the row", err)
	}
}

// The credit is what the jobs say: a job of J ms at slowdown s where a
// long one reads f ran C = J (f - s) / (f - 1) ms at once; the median of
// the jobs that can say it.
func TestFitWakeCreditInvertsTheJobs(t *testing.T) {
	job := func(c, j, f float64) WakeLevel {
		return WakeLevel{SpinnersPerCPU: 1, JobMs: j, Slowdown: (c + (j-c)*f) / j, ShareSlowdown: f}
	}
	if got := FitWakeCredit([]WakeLevel{job(1, 2, 2), job(1, 5, 3), job(1.2, 5, 2.5)}); math.Abs(got-1) > 1e-9 {
		t.Errorf("credit %v, want the median 1", got)
	}
	// A job inside its credit says only "at least J": clamped to J. A
	// level whose long job is not slowed says nothing.
	if got := FitWakeCredit([]WakeLevel{{SpinnersPerCPU: 1, JobMs: 1, Slowdown: 0.98, ShareSlowdown: 2}}); got != 1 {
		t.Errorf("a 1 ms job unslowed: credit %v, want 1", got)
	}
	if got := FitWakeCredit([]WakeLevel{{SpinnersPerCPU: 0.1, JobMs: 2, Slowdown: 1, ShareSlowdown: 1.01}}); got != 0 {
		t.Errorf("nothing slowed: credit %v, want 0 (unknown)", got)
	}
	// The measurement of docs/calibration.md: 2 and 5 ms jobs beside 2, 4
	// and 6 spinners on 2 CPUs, long jobs at 1.98, 2.92 and 3.83.
	measured := []WakeLevel{
		{1, 2, 1.62, 1.98}, {1, 5, 1.95, 1.98}, {2, 2, 1.43, 2.92}, {2, 5, 2.49, 2.92}, {3, 2, 2.32, 3.83}, {3, 5, 3.36, 3.83},
	}
	if got := FitWakeCredit(measured); got < 0.8 || got > 1.2 {
		t.Errorf("the measured jobs fit %v ms, want about 1", got)
	}
}
