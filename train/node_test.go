package train

import (
	"math"
	"strings"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// A v1 scenario runs on a node where every worker has a CPU of its own:
// every task finishes its cost after it starts, exactly as before the
// node existed.
func TestV1TasksServeForTheirCost(t *testing.T) {
	sc := tinyScenario(t, 300)
	out, err := Run(sc, ReserveRule{}, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range out {
		if o := &out[i]; o.Finished {
			n++
			if o.FinishMs != o.StartMs+o.CostMs {
				t.Fatalf("task %d started at %v and finished at %v for a cost of %v", o.ID, o.StartMs, o.FinishMs, o.CostMs)
			}
		}
	}
	if n == 0 {
		t.Fatal("nothing finished")
	}
}

// nodeScenario is 4 workers of constant 10 ms CPU tasks on cpus CPUs, with
// a CPU neighbour of threads over [20, 40) s and a writer storm over
// [40, 50) s for the I/O class.
func nodeScenario(t *testing.T, cpus int) *Scenario {
	t.Helper()
	src := strings.NewReplacer("CPUS", ftoa(float64(cpus))).Replace(`{"name":"node","seed":3,"duration_s":60,"workers":4,"node":{"cpus":CPUS},
	 "arrival":{"process":"poisson","rate_per_s":60},
	 "interference":[{"kind":"cpu","at_s":20,"for_s":20,"threads":4},{"kind":"io","at_s":40,"for_s":10,"writers":8}],
	 "classes":[{"name":"cpu","share":0.5,"sla_ms":100,"cost_ms":{"dist":"constant","value":10}},
	            {"name":"io","share":0.5,"sla_ms":100,"io_share":0.5,"cost_ms":{"dist":"constant","value":10}}]}`)
	sc := mustParseScenario(t, src)
	return sc
}

type window struct{ lo, hi float64 } // seconds

func (w window) has(ms float64) bool { return ms >= w.lo*1000 && ms < w.hi*1000 }

// meanOver is the mean of f over the finished tasks that started in w.
func meanOver(out []Outcome, w window, class int, f func(*Outcome) float64) (float64, int) {
	s, n := 0.0, 0
	for i := range out {
		o := &out[i]
		if o.Finished && o.Class == class && w.has(o.StartMs) && w.has(o.FinishMs) {
			s += f(o)
			n++
		}
	}
	return s / math.Max(1, float64(n)), n
}

// The node slows tasks as the calibration says: CPU work stretches with
// the neighbour's threads, I/O with the writers; the kernel features rise
// with the contention.
func TestContentionSlowsTasksAndShowsInTheSignals(t *testing.T) {
	sc := nodeScenario(t, 2)
	var states []struct {
		at float64
		s  policy.State
	}
	out, err := Run(sc, ReserveRule{}, SimConfig{OnDecide: func(o *Outcome) {
		states = append(states, struct {
			at float64
			s  policy.State
		}{o.ArrivalMs, o.State})
	}})
	if err != nil {
		t.Fatal(err)
	}
	quiet, cpuEp, ioEp := window{5, 19}, window{22, 39}, window{42, 49}
	svc := func(o *Outcome) float64 { return o.ServiceMs() }
	cq, _ := meanOver(out, quiet, 0, svc)
	cc, n := meanOver(out, cpuEp, 0, svc)
	if n < 20 || cc < 1.5*cq {
		t.Errorf("CPU class: %.1f ms quiet, %.1f ms under 4 neighbour threads (%d tasks): want at least 1.5x", cq, cc, n)
	}
	iq, _ := meanOver(out, quiet, 1, svc)
	ii, n := meanOver(out, ioEp, 1, svc)
	ci, _ := meanOver(out, ioEp, 0, svc)
	// Writers cost CPU too (Calibration.WriterThreads), so the CPU class
	// slows under them, but less than the class that writes.
	if n < 20 || ii < 1.3*iq || ci/cq >= ii/iq {
		t.Errorf("under 8 writers: I/O class %.1f ms (quiet %.1f), CPU class %.1f ms (quiet %.1f): want the I/O class slowed more than the CPU class", ii, iq, ci, cq)
	}
	mean := func(w window, f int) float64 {
		s, n := 0.0, 0
		for _, x := range states {
			if w.has(x.at) {
				s += float64(x.s[f])
				n++
			}
		}
		return s / math.Max(1, float64(n))
	}
	if q, c := mean(quiet, policy.FeatRunqP99), mean(cpuEp, policy.FeatRunqP99); c <= q+0.05 {
		t.Errorf("run-queue p99 feature: %.3f quiet, %.3f under the CPU neighbour", q, c)
	}
	if q, i := mean(quiet, policy.FeatBlkioP99), mean(ioEp, policy.FeatBlkioP99); i <= q+0.05 {
		t.Errorf("block-I/O p99 feature: %.3f quiet, %.3f under the writers", q, i)
	}
}

// The kernel features come from contention, not from the queue: a v1
// node whose queue grows without bound (every worker has its CPU) shows no
// more run-queue latency than the same node half idle.
func TestKernelFeaturesFollowContentionNotTheQueue(t *testing.T) {
	runq := func(rate float64) float64 {
		sc := tinyScenario(t, rate)
		var sum float64
		var n int
		_, err := Run(sc, FIFO{}, SimConfig{OnDecide: func(o *Outcome) {
			if o.ArrivalMs > 2000 {
				sum += float64(o.State[policy.FeatRunqP99])
				n++
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		return sum / float64(n)
	}
	busy, overloaded := runq(150), runq(1500)
	if overloaded > busy+0.05 {
		t.Errorf("run-queue p99 feature rose with the queue alone: %.3f at a full node, %.3f at ten times overload", busy, overloaded)
	}
}

// Writers do not lengthen the simulated run queue: on a real node an
// fsync'd writer wakes onto a CPU at once, so writers dilute the run-queue
// p99 rather than raise it (docs/calibration.md, "The run queue under
// writers"). The run-queue features are read at the threads that queue
// (the executor's tasks in their CPU parts, the neighbours' spinners); the
// utilisation still counts the writers' CPU.
func TestWritersDoNotLengthenTheRunQueue(t *testing.T) {
	sc := nodeScenario(t, 2)
	n := newNodeModel(sc, DefaultCalibration())
	n.set(1, 2, 3, 45_000) // 8 neighbour writers run over [40, 50) s
	if n.writerCPU <= 0 {
		t.Fatalf("11 writers keep no CPU busy: %v", n.writerCPU)
	}
	if got, want := n.queueingLoad(), 3.0/2; got != want {
		t.Errorf("queueing load %v, want %v: 3 tasks in their CPU parts on 2 CPUs, the writers not counted", got, want)
	}
	if n.cpuLoad() <= n.queueingLoad() {
		t.Errorf("CPU load %v, want more than the queueing load %v: the writers' CPU counts there", n.cpuLoad(), n.queueingLoad())
	}
	n.set(0, 2, 0, 25_000) // 4 neighbour threads over [20, 40) s
	if got, want := n.queueingLoad(), 6.0/2; got != want {
		t.Errorf("queueing load beside the spinners %v, want %v", got, want)
	}
	// The signals' window over a second of the writers alone: the run
	// queue's load stays 0, the utilisation rises.
	n.set(0, 0, 0, 45_000)
	g := newSignals(sc, DefaultCalibration(), n, 1, 0, 0)
	g.advance(1_000)
	if g.win.cpuMean != 0 || g.win.cpuHigh != 0 || g.win.overP99 != 0 {
		t.Errorf("8 writers alone: run-queue window %+v, want no load", g.win)
	}
	if !(g.util > 0) {
		t.Errorf("8 writers alone: utilisation %v, want their CPU", g.util)
	}
}
