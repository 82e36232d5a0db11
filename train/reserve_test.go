package train

import (
	"math"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// backgroundAsking puts every task in the background and asks the
// executor for share of the workers to be left free.
type backgroundAsking struct{ share float64 }

func (p backgroundAsking) Name() string { return "background" }
func (p backgroundAsking) Assign(t *Task, _ *NodeView) (int, float64, error) {
	return 0, t.DeadlineMs(), nil
}
func (p backgroundAsking) Reserve(*NodeView) float64 { return p.share }

// The executor honours the reserve a Reserver asks for: with 8 workers and
// every task in the background, at most 8 − 2 run at once on the calm
// reserve, 8 − 4 on the contended one; a policy that asks nothing gets the
// calm one.
func TestSimulatorHoldsBackTheReserveItsPolicyAsksFor(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"reserve","seed":3,"duration_s":5,"workers":8,
	 "arrival":{"process":"poisson","rate_per_s":400},
	 "classes":[{"name":"a","share":1,"sla_ms":1000,"cost_ms":{"dist":"exponential","mean":50}}]}`)
	for _, c := range []struct {
		p    Policy
		most int
	}{
		{constLevel(0), 6},
		{backgroundAsking{policy.CalmReserve}, 6},
		{backgroundAsking{policy.ContendedReserve}, 4},
	} {
		out, err := Run(sc, c.p, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if got := MostAtOnce(out, 0); got != c.most {
			t.Errorf("%T %v: at most %d in service, want %d", c.p, c.p, got, c.most)
		}
		// Every start is marked held back under the contended reserve and
		// none under the calm one.
		wantHeld := c.most == 4
		for i := range out {
			if out[i].Started && out[i].HeldBack != wantHeld {
				t.Fatalf("%T %v: task %d started with HeldBack %v", c.p, c.p, i, out[i].HeldBack)
			}
		}
	}
}

// The model's rows ask for the reserve of the state they see: while no
// slowdown is known, the contended one on a contended kernel, and the calm
// one when blind to the kernel (dqn-ablated), as the agent with --ablate
// kernel sends; once the work's slowdown is known, it decides for both.
func TestModelRowsAskForTheReserveOfWhatTheySee(t *testing.T) {
	in := policy.Inputs{RunqP99Us: 5 * policy.ContendedRunqP99Us, SLAMs: 20, CostMs: 2}
	v := &NodeView{State: policy.Vector(&in), Slowdown: math.NaN()}
	sess := policy.NewGoDecider(constNet([policy.NumActions]float32{4: 1}), policy.CurrentMetadata("test", ""))
	seeing := &DeciderPolicy{Label: "dqn", Decider: sess}
	blind := &DeciderPolicy{Label: "dqn-ablated", Decider: &AblatedDecider{Decider: sess, Off: policy.KernelFeatures}}
	if got := seeing.Reserve(v); got != policy.ContendedReserve {
		t.Errorf("seeing the kernel: %v, want %v", got, policy.ContendedReserve)
	}
	if got := blind.Reserve(v); got != policy.CalmReserve {
		t.Errorf("blind to the kernel: %v, want %v", got, policy.CalmReserve)
	}
	for _, c := range []struct {
		slowdown float64
		want     float64
	}{{2, policy.ContendedReserve}, {1, policy.CalmReserve}} {
		v.Slowdown = c.slowdown
		for _, p := range []*DeciderPolicy{seeing, blind} {
			if got := p.Reserve(v); got != c.want {
				t.Errorf("%s, slowdown %v known: %v, want %v", p.Label, c.slowdown, got, c.want)
			}
		}
	}
}

// The served rows (the agent's policy) size a contended reserve to the
// foreground's recent load, as the agent does, where the run queue does
// not say the CPUs are oversubscribed; blind to the kernel, always. The
// trainer's network asks for the unsized one it was trained under, so
// that `make model` rebuilds the shipped model.
func TestServedRowsSizeTheContendedReserveToTheForeground(t *testing.T) {
	v := &NodeView{State: policy.Neutral, Slowdown: 2, Workers: 8}
	sess := policy.NewGoDecider(constNet([policy.NumActions]float32{4: 1}), policy.CurrentMetadata("test", ""))
	served := &DeciderPolicy{Label: "dqn", Decider: sess}
	trainer := &MLPPolicy{Label: "trainer", Net: constNet([policy.NumActions]float32{4: 1})}
	for _, c := range []struct {
		fg, want float64
	}{{0, policy.CalmReserve}, {0.5, 3.0 / 8}, {4, policy.ContendedReserve}} {
		v.ForegroundWorkers = c.fg
		if got := served.Reserve(v); got != c.want {
			t.Errorf("served, foreground %v workers: %v, want %v", c.fg, got, c.want)
		}
		if got := trainer.Reserve(v); got != policy.ContendedReserve {
			t.Errorf("trainer, foreground %v workers: %v, want the unsized %v", c.fg, got, policy.ContendedReserve)
		}
	}
	in := policy.Inputs{RunqP99Us: 5 * policy.ContendedRunqP99Us, SLAMs: 20, CostMs: 2}
	v.State, v.ForegroundWorkers = policy.Vector(&in), 0
	blind := &DeciderPolicy{Label: "dqn-ablated", Decider: &AblatedDecider{Decider: sess, Off: policy.KernelFeatures}}
	if got := served.Reserve(v); got != policy.ContendedReserve {
		t.Errorf("served, a long run queue, no foreground: %v, want the half %v", got, policy.ContendedReserve)
	}
	if got := blind.Reserve(v); got != policy.CalmReserve {
		t.Errorf("blind to the kernel, no foreground: %v, want the sized %v", got, policy.CalmReserve)
	}
}

// The simulator tells the policy the foreground's load, the task being
// decided included: the described cost of the tasks that arrived in the
// last second (to its 50 ms buckets), over a second.
func TestSimulatorShowsTheForegroundsLoad(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"fg","seed":3,"duration_s":4,"workers":8,
	 "arrival":{"process":"poisson","rate_per_s":50},
	 "classes":[{"name":"a","share":1,"sla_ms":1000,"cost_ms":{"dist":"constant","value":10}}]}`)
	p := &foregroundSeen{}
	out, err := Run(sc, p, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.seen) != len(out) || len(out) < 150 {
		t.Fatalf("%d reserves asked for %d tasks, want one per task", len(p.seen), len(out))
	}
	for i := range out {
		now := out[i].ArrivalMs
		var most, least float64 // the work of the last 1000 ms, and of the last 950
		for j := 0; j <= i; j++ {
			if age := now - out[j].ArrivalMs; age < policy.ForegroundLoadWindowMs {
				most += out[j].ExpectedMs
				if age < policy.ForegroundLoadWindowMs-50 {
					least += out[j].ExpectedMs
				}
			}
		}
		if fg := p.seen[i] * policy.ForegroundLoadWindowMs; fg < least-1e-9 || fg > most+1e-9 {
			t.Fatalf("task %d at %.1f ms: foreground %.1f ms of work, want %.1f to %.1f", i, now, fg, least, most)
		}
	}
}

// foregroundSeen serves every task at level 1 and records the foreground
// load it is shown.
type foregroundSeen struct{ seen []float64 }

func (p *foregroundSeen) Name() string { return "foreground-seen" }
func (p *foregroundSeen) Assign(t *Task, _ *NodeView) (int, float64, error) {
	return 1, t.DeadlineMs(), nil
}
func (p *foregroundSeen) Reserve(v *NodeView) float64 {
	p.seen = append(p.seen, v.ForegroundWorkers)
	return policy.CalmReserve
}

// slowdownSeen serves every task at level 1 and asks for the reserve of
// what it sees, as the model rows do, recording the slowdowns it was shown.
type slowdownSeen struct {
	known, unknown int
	most           float64
	contended      int // reserves asked above the calm one
}

func (p *slowdownSeen) Name() string { return "slowdown-seen" }
func (p *slowdownSeen) Assign(t *Task, _ *NodeView) (int, float64, error) {
	return 1, t.DeadlineMs(), nil
}
func (p *slowdownSeen) Reserve(v *NodeView) float64 {
	if v.Slowdown > 0 {
		p.known++
		p.most = max(p.most, v.Slowdown)
	} else {
		p.unknown++
	}
	r := seenReserve(v, nil)
	if r > policy.CalmReserve {
		p.contended++
	}
	return r
}

// On a node whose one CPU a neighbour's threads share, the policies see
// the work's slowdown once enough tasks finished, and ask for the
// contended reserve from it; with an upstream that reports no service
// times (SimConfig.NoServiceTimes) they never see one, and the reserve
// they ask for follows the kernel's run queue alone.
func TestPoliciesSeeTheSlowdownOnlyWhereServiceTimesAreReported(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"slowed","seed":5,"duration_s":6,"workers":4,"node":{"cpus":1},
	 "arrival":{"process":"poisson","rate_per_s":60},
	 "interference":[{"kind":"cpu","at_s":0,"for_s":6,"threads":3}],
	 "classes":[{"name":"a","share":1,"sla_ms":200,"cost_ms":{"dist":"constant","value":5}}]}`)
	var reported, unreported slowdownSeen
	if _, err := Run(sc, &reported, SimConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(sc, &unreported, SimConfig{NoServiceTimes: true}); err != nil {
		t.Fatal(err)
	}
	if reported.known == 0 || reported.most < policy.MinReserveSlowdown || reported.contended == 0 {
		t.Errorf("service times reported: %d tasks saw a slowdown (most %.2f), %d asked for more than the calm reserve; want the slowdown seen at %v or more, and acted on",
			reported.known, reported.most, reported.contended, policy.MinReserveSlowdown)
	}
	if unreported.known != 0 || unreported.unknown == 0 {
		t.Errorf("no service times: %d tasks saw a slowdown, %d none; want none seen", unreported.known, unreported.unknown)
	}
	if unreported.contended == 0 {
		t.Errorf("no service times, a CPU shared four ways: no task asked for the contended reserve; want the run queue to ask for it")
	}
}
