package train

import (
	"math"
	"strings"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// The oversubscribed run queue reproduces the bursty rows measured on the
// 2-CPU VM (docs/calibration.md, "Bursty threads and the run queue") from
// the steady calibration: four bursty threads at 25% and 40% busy, 5% and
// 18% of the time oversubscribed, read 2,078 and 3,402 µs.
func TestRunqP99OversubscribedFitsTheBurstyRows(t *testing.T) {
	cal := DefaultCalibration()
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
