package train

import (
	"testing"

	"github.com/triage-agent/triage/policy"
)

// The served rows release the calm reserve once no foreground task has
// arrived for policy.ForegroundGoneMs on a node whose run queue is known
// and short, as the agent does; blind to the kernel they keep it, and the
// trainer's network keeps the reserve it was trained under.
func TestServedRowsReleaseTheReserveThatProtectsNoOne(t *testing.T) {
	calm := policy.Inputs{RunqP99Us: 60, SLAMs: 2000, CostMs: 100}
	v := &NodeView{State: policy.Vector(&calm), Slowdown: 1, Workers: 8}
	sess := policy.NewGoDecider(constNet([policy.NumActions]float32{0: 1}), policy.CurrentMetadata("test", ""))
	served := &DeciderPolicy{Label: "dqn", Decider: sess}
	blind := &DeciderPolicy{Label: "dqn-ablated", Decider: &AblatedDecider{Decider: sess, Off: policy.KernelFeatures}}
	trainer := &MLPPolicy{Label: "trainer", Net: constNet([policy.NumActions]float32{0: 1})}
	// What the served rows hold while they hold anything: the calm reserve
	// sized to a foreground of no load, one worker of the 8.
	kept := policy.SizeCalmReserve(0, 1, 8)
	if policy.ReserveWorkers(kept, 8) != 1 {
		t.Fatalf("the calm reserve of 8 workers without a foreground holds %d, want 1", policy.ReserveWorkers(kept, 8))
	}
	for _, c := range []struct {
		idleMs float64
		want   float64
	}{{0, kept}, {policy.ForegroundGoneMs - 1, kept}, {policy.ForegroundGoneMs, 0}, {60_000, 0}} {
		v.ForegroundIdleMs = c.idleMs
		if got := served.Reserve(v); got != c.want {
			t.Errorf("served, foreground gone %v ms: %v, want %v", c.idleMs, got, c.want)
		}
		if got := blind.Reserve(v); got != kept {
			t.Errorf("blind, foreground gone %v ms: %v, want %v", c.idleMs, got, kept)
		}
		if got := trainer.Reserve(v); got != policy.CalmReserve {
			t.Errorf("trainer, foreground gone %v ms: %v, want %v", c.idleMs, got, policy.CalmReserve)
		}
	}
	long := policy.Inputs{RunqP99Us: 5 * policy.ContendedRunqP99Us, SLAMs: 2000, CostMs: 100}
	v.State, v.Slowdown = policy.Vector(&long), 0
	if got := served.Reserve(v); got != policy.ContendedReserve {
		t.Errorf("served, foreground gone, a long run queue: %v, want the half %v", got, policy.ContendedReserve)
	}
}

// The simulator tells the policy how long the foreground has been gone:
// from the run's start until a task is served at level 1 or more, then
// from the latest such task's arrival, the task being decided included.
func TestSimulatorShowsHowLongTheForegroundHasBeenGone(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"gone","seed":4,"duration_s":6,"workers":4,
	 "arrival":{"process":"poisson","rate_per_s":40},
	 "classes":[{"name":"a","share":1,"sla_ms":1000,"cost_ms":{"dist":"constant","value":10}}]}`)
	p := &idleSeen{foregroundUntilMs: 2000}
	out, err := Run(sc, p, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.seen) != len(out) || len(out) < 150 {
		t.Fatalf("%d reserves asked for %d tasks, want one per task", len(p.seen), len(out))
	}
	last := 0.0
	for i := range out {
		now := out[i].ArrivalMs
		if now < p.foregroundUntilMs {
			last = now
		}
		if want := now - last; p.seen[i] != want {
			t.Fatalf("task %d at %.1f ms: foreground gone %.1f ms, want %.1f", i, now, p.seen[i], want)
		}
	}
	if last == 0 || p.seen[len(out)-1] < 3000 {
		t.Fatalf("the foreground's last task at %.1f ms, gone %.1f ms at the end: the run did not show both", last, p.seen[len(out)-1])
	}
}

// idleSeen serves every task at level 1 until foregroundUntilMs, then at
// 0, and records how long the foreground had been gone at each decision.
type idleSeen struct {
	foregroundUntilMs float64
	seen              []float64
}

func (p *idleSeen) Name() string { return "idle-seen" }
func (p *idleSeen) Assign(t *Task, _ *NodeView) (int, float64, error) {
	if t.ArrivalMs < p.foregroundUntilMs {
		return 1, t.DeadlineMs(), nil
	}
	return 0, t.DeadlineMs(), nil
}
func (p *idleSeen) Reserve(v *NodeView) float64 {
	p.seen = append(p.seen, v.ForegroundIdleMs)
	return policy.CalmReserve
}

// Where every task is background, the served row runs on every worker
// once the foreground has been gone long enough, and meets more SLAs than
// the same model blind to the kernel, which keeps a quarter of the node
// idle for a foreground that never comes.
func TestBackgroundOnlyWorkloadGetsTheWholeNode(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"batch-only","seed":9,"duration_s":30,"workers":8,
	 "arrival":{"process":"poisson","rate_per_s":72},
	 "classes":[{"name":"job","share":1,"sla_ms":3000,"cost_ms":{"dist":"constant","value":100}}]}`)
	sess := policy.NewGoDecider(constNet([policy.NumActions]float32{0: 1}), policy.CurrentMetadata("test", ""))
	served := &DeciderPolicy{Label: "dqn", Decider: sess}
	blind := &DeciderPolicy{Label: "dqn-ablated", Decider: &AblatedDecider{Decider: sess, Off: policy.KernelFeatures}}
	var busy [2]int
	var met [2]float64
	for k, p := range []Policy{served, blind} {
		out, err := Run(sc, p, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		busy[k] = MostAtOnce(out, 0)
		met[k] = Summarise(sc, out).SLAAttainment
	}
	// Blind, the agent keeps the calm reserve, sized to a foreground of
	// nothing: one worker of the 8.
	if busy[0] != 8 || busy[1] != 7 {
		t.Errorf("workers busy at most: served %d, blind %d; want 8 and 7", busy[0], busy[1])
	}
	if met[0] <= met[1] {
		t.Errorf("SLA attainment: served %.4f, blind %.4f; want the served row above", met[0], met[1])
	}
	t.Logf("served: %d workers, %.4f met; blind: %d workers, %.4f met", busy[0], met[0], busy[1], met[1])
}
