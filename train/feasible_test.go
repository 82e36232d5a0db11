package train

import (
	"math/rand/v2"
	"testing"
)

// feasibleWork answers what a pass over the queue would: the expected work
// queued at a level or above that can still start in time, as tasks are
// queued, started and turn late.
func TestFeasibleWorkMatchesAPassOverTheQueue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]Outcome, 3000)
	for i := range out {
		out[i] = Outcome{Task: Task{ID: i, ArrivalMs: float64(i), SLAMs: 1 + 200*r.Float64(), ExpectedMs: 50 * r.Float64()}, Level: r.IntN(5)}
	}
	f := newFeasibleWork(&out)
	queued := map[int]bool{}
	for i := range out {
		now := float64(i)
		f.queued(i, now)
		queued[i] = true
		if r.IntN(3) == 0 { // start one queued task
			for j := range queued {
				f.started(j)
				delete(queued, j)
				break
			}
		}
		level := r.IntN(5)
		want := 0.0
		for j := range queued {
			o := &out[j]
			if o.Level >= level && now+o.ExpectedMs <= o.DeadlineMs() {
				want += o.ExpectedMs
			}
		}
		if got := f.atOrAbove(level, now); got < want-1e-6 || got > want+1e-6 {
			t.Fatalf("task %d, level %d: %v, a pass over the queue %v", i, level, got, want)
		}
	}
	// Long after every deadline nothing counts, and exactly nothing.
	if got := f.atOrAbove(0, 1e9); got != 0 {
		t.Fatalf("after every deadline: %v, want 0", got)
	}
}

// slack-rule asks WaitMs for every task; on a node whose long class queues
// by the thousand that was a pass over the queue per decision
// (testdata/outside/out-ms-and-minutes).
func BenchmarkSlackRuleLongQueue(b *testing.B) {
	sc := mustParseScenario(b, `{"name":"long-queue","seed":3,"duration_s":60,"workers":8,"node":{"cpus":8},
	 "arrival":{"process":"poisson","rate_per_s":400},
	 "classes":[{"name":"fast","share":0.97,"sla_ms":3,"cost_ms":{"dist":"lognormal","median":0.3,"p99":1.5}},
	            {"name":"slow","share":0.03,"sla_ms":60000,"cost_ms":{"dist":"lognormal","median":4000,"p99":20000}}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(sc, SlackRule{}, SimConfig{}); err != nil {
			b.Fatal(err)
		}
	}
}
