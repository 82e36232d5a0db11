package train

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// Without bursty levels the oversubscribed run queue reproduces the rows
// measured on the 2-CPU VM with a Python load (docs/calibration.md,
// "Bursty threads and the run queue") from the steady calibration: four
// bursty threads at 25% and 40% busy, 5% and 18% of the time
// oversubscribed, read 2,078 and 3,402 µs.
func TestRunqP99OversubscribedFitsTheBurstyRows(t *testing.T) {
	cal := DefaultCalibration()
	cal.Bursty = nil
	if e := cal.OversubscribedExponent(); e != DefaultOversubscribedExponent {
		t.Fatalf("without bursty levels the exponent is %v, want the default %v", e, DefaultOversubscribedExponent)
	}
	for _, row := range []struct{ share, load, measuredUs float64 }{
		{0.05, 1.5, 2078},
		{0.18, 1.57, 3402},
	} {
		got, sigma := cal.RunqP99Oversubscribed(row.share, row.load)
		if got < 0.7*row.measuredUs || got > 1.3*row.measuredUs || !(sigma > 0) {
			t.Errorf("share %.2f at %.2f threads per CPU: p99 %.0f µs (sigma %v), measured %.0f µs", row.share, row.load, got, sigma, row.measuredUs)
		}
	}
	if got, _ := cal.RunqP99Oversubscribed(1, 1.5); got != cal.CPUAt(1.5).RunqP99Us {
		t.Errorf("a window oversubscribed throughout reads %v µs, want the steady level's %v", got, cal.CPUAt(1.5).RunqP99Us)
	}
	prev := 0.0
	for _, share := range []float64{MinOversubscribedShare, 0.02, 0.1, 0.5, 1, 2} {
		got, _ := cal.RunqP99Oversubscribed(share, 2)
		if got < prev || got == 0 {
			t.Errorf("share %v reads %v µs after %v µs: want positive and not falling", share, got, prev)
		}
		prev = got
	}
	for _, in := range [][2]float64{{0.005, 2}, {0.5, 1}, {0.5, 0.8}, {math.NaN(), 2}, {0.5, math.NaN()}, {-1, 2}} {
		if got, sigma := cal.RunqP99Oversubscribed(in[0], in[1]); got != 0 || sigma != 0 {
			t.Errorf("share %v at %v threads per CPU reads %v µs, want 0 (not oversubscribed enough to show)", in[0], in[1], got)
		}
	}
}

// The committed calibration carries the bursty levels `triage calibrate`
// measured, and the simulator reads each of them back within 15%.
func TestTheDefaultCalibrationReadsItsBurstyLevelsBack(t *testing.T) {
	cal := DefaultCalibration()
	if len(cal.Bursty) < 2 {
		t.Fatalf("%d bursty levels in the default calibration, want the measured ones", len(cal.Bursty))
	}
	for _, b := range cal.Bursty {
		got, _ := cal.RunqP99Oversubscribed(b.OversubscribedShare, b.OversubscribedLoad)
		if math.Abs(got/b.RunqP99Us-1) > 0.15 {
			t.Errorf("%d threads at %.2f: simulated p99 %.0f µs, measured %.0f", b.Threads, b.Duty, got, b.RunqP99Us)
		}
	}
}

// The exponent is the one the levels say, clamped to [0, 1]; levels that
// cannot say it are left out.
func TestOversubscribedExponentIsFittedToTheLevels(t *testing.T) {
	cal := DefaultCalibration()
	level := func(share, load, e float64) BurstyLevel {
		return BurstyLevel{Threads: 4, Duty: 0.3, BurstMs: 5, OversubscribedShare: share, OversubscribedLoad: load,
			RunqP99Us: cal.CPUAt(load).RunqP99Us * math.Pow(share, e)}
	}
	cal.Bursty = []BurstyLevel{level(0.05, 1.5, 0.4), level(0.2, 1.6, 0.4)}
	if e := cal.OversubscribedExponent(); math.Abs(e-0.4) > 1e-9 {
		t.Errorf("exponent %v, want 0.4", e)
	}
	cal.Bursty = append(cal.Bursty, level(0.005, 1.5, 3), level(1, 2, 3), level(0.1, 0.9, 3))
	if e := cal.OversubscribedExponent(); math.Abs(e-0.4) > 1e-9 {
		t.Errorf("exponent %v with levels that cannot say it, want 0.4", e)
	}
	cal.Bursty = []BurstyLevel{level(0.05, 1.5, 2)}
	cal.Bursty[0].RunqP99Us = 2 * cal.CPUAt(1.5).RunqP99Us // above the steady level
	if e := cal.OversubscribedExponent(); e != 0 {
		t.Errorf("a p99 over the steady level's gives exponent %v, want 0", e)
	}
}

func TestOversubscriptionIsBinomial(t *testing.T) {
	share, load := Oversubscription(4, 0.25, 2)
	// P(3 or 4 of 4 runnable) = 4·0.25³·0.75 + 0.25⁴; their mean is 3.08 threads.
	if want := 4*0.015625*0.75 + 0.00390625; math.Abs(share-want) > 1e-12 || math.Abs(load-(3*0.046875+4*0.00390625)/want/2) > 1e-12 {
		t.Errorf("4 threads at 25%% on 2 CPUs: share %v, load %v", share, load)
	}
	for _, c := range []struct {
		threads int
		duty    float64
		cpus    int
	}{{2, 0.9, 2}, {4, 0, 2}, {4, 0.5, 0}, {1, 1, 1}} {
		if s, l := Oversubscription(c.threads, c.duty, c.cpus); s != 0 || l != 0 {
			t.Errorf("%+v: share %v, load %v, want 0, 0", c, s, l)
		}
	}
	if s, l := Oversubscription(64, 1, 32); s != 1 || l != 2 {
		t.Errorf("64 steady threads on 32 CPUs: share %v, load %v, want 1, 2", s, l)
	}
	// Half of 2000 threads on 1000 CPUs: over the CPUs a little less
	// than half the time (exactly 1000 runnable is not over).
	if s, _ := Oversubscription(2000, 0.5, 1000); !(s > 0.45 && s < 0.5) {
		t.Errorf("2000 threads at 50%% on 1000 CPUs: share %v, want just under a half", s)
	}
}

// A calibration whose bursty levels are not numbers that can be read is
// refused, naming the level.
func TestBadBurstyLevelsAreRefused(t *testing.T) {
	for _, mut := range []func(*BurstyLevel){
		func(b *BurstyLevel) { b.Threads = 0 },
		func(b *BurstyLevel) { b.Duty = 1.5 },
		func(b *BurstyLevel) { b.BurstMs = math.NaN() },
		func(b *BurstyLevel) { b.OversubscribedShare = -0.1 },
		func(b *BurstyLevel) { b.RunqP99Us = math.Inf(1) },
	} {
		cal := DefaultCalibration()
		mut(&cal.Bursty[0])
		if err := cal.Validate(); !errors.Is(err, ErrBadCalibration) || !strings.Contains(err.Error(), "bursty[0]") {
			t.Errorf("validate: %v, want ErrBadCalibration naming bursty[0]", err)
		}
	}
}

// An executor's own workers lengthen the run queue when they outnumber the
// CPUs, as they do on a real node (four bursty threads on two CPUs read a
// p99 over 1 ms at half the CPUs' capacity), and not when they cannot:
// the same offered load on 2 CPUs served by 4 workers reads a contended
// run queue in a good share of its states, by 2 workers in none.
func TestWorkersOutnumberingTheCPUsLengthenTheRunQueue(t *testing.T) {
	contended := policy.Vector(&policy.Inputs{RunqP99Us: policy.ContendedRunqP99Us})[policy.FeatRunqP99]
	share := func(workers int) float64 {
		src := strings.NewReplacer("WORKERS", ftoa(float64(workers))).Replace(`{"name":"bursty-workers","seed":5,"duration_s":30,"workers":WORKERS,"node":{"cpus":2},
		 "arrival":{"process":"poisson","rate_per_s":100},
		 "classes":[{"name":"cpu","share":1,"sla_ms":200,"cost_ms":{"dist":"exponential","mean":10}}]}`)
		sc := mustParseScenario(t, src)
		var over, n int
		_, err := Run(sc, FIFO{}, SimConfig{OnDecide: func(o *Outcome) {
			if o.ArrivalMs > 2000 {
				n++
				if o.State[policy.FeatRunqP99] >= contended {
					over++
				}
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		return float64(over) / float64(n)
	}
	four, two := share(4), share(2)
	if four < 0.5 || two > 0.05 {
		t.Errorf("states with a run-queue p99 of 1 ms or more at half the CPUs' capacity: %.2f with 4 workers, %.2f with 2; want at least 0.5 and at most 0.05", four, two)
	}
}
