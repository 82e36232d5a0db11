package train

import (
	"testing"

	"github.com/triage-agent/triage/policy"
)

// reserveRuleServed decides as reserve-rule (under 50 ms of SLA at 4, the
// rest at 0) and tells the executor the reserve the agent serves, or, not
// sized, the one the trainer's network was trained under.
type reserveRuleServed struct{ sized bool }

func (p reserveRuleServed) Name() string { return "reserve-rule-served" }
func (p reserveRuleServed) Assign(t *Task, v *NodeView) (int, float64, error) {
	return ReserveRule{}.Assign(t, v)
}
func (p reserveRuleServed) Reserve(v *NodeView) float64 {
	if p.sized {
		return servedReserve(v, nil)
	}
	return seenReserve(v, nil)
}

// On a calm node of 32 workers whose foreground keeps about half a worker
// busy, the quarter holds 8 workers back from a background that needs 28:
// the served reserve, sized to the foreground, holds one or two (measured:
// 31 background tasks at once, every SLA met, against 24 and 0.9528), and
// the foreground loses nothing.
func TestLargeCalmNodeHoldsBackWhatItsForegroundNeeds(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"large-calm","seed":4,"duration_s":30,"workers":32,"node":{"cpus":32},
	 "arrival":{"process":"poisson","rate_per_s":374},
	 "classes":[{"name":"rt","share":0.5,"sla_ms":25,"cost_ms":{"dist":"constant","value":3}},
	            {"name":"batch","share":0.5,"sla_ms":3000,"cost_ms":{"dist":"constant","value":150}}]}`)
	var busy [2]int
	var met [2]float64
	var rt [2]float64
	for k, p := range []Policy{reserveRuleServed{sized: true}, reserveRuleServed{}} {
		out, err := Run(sc, p, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		busy[k] = MostAtOnce(out, 0)
		met[k] = Summarise(sc, out).SLAAttainment
		n, ok := 0, 0
		for _, o := range out {
			if o.Class == 0 {
				n++
				if o.Met {
					ok++
				}
			}
		}
		rt[k] = float64(ok) / float64(n)
	}
	t.Logf("sized: %d background at once, %.4f met (rt %.4f); the quarter: %d, %.4f (rt %.4f)", busy[0], met[0], rt[0], busy[1], met[1], rt[1])
	if want := 32 - policy.ReserveWorkers(policy.CalmReserve, 32); busy[1] != want {
		t.Errorf("the quarter: %d background tasks at once, want %d", busy[1], want)
	}
	if busy[0] <= busy[1] || busy[0] > 32-policy.MinCalmHeldWorkers {
		t.Errorf("sized: %d background tasks at once, want more than the quarter's %d and at most %d", busy[0], busy[1], 32-policy.MinCalmHeldWorkers)
	}
	if met[0] < met[1]+0.03 {
		t.Errorf("SLA attainment: sized %.4f, the quarter %.4f; want the sized reserve 3 points above", met[0], met[1])
	}
	if rt[0] < rt[1]-0.001 {
		t.Errorf("the foreground: sized %.4f, the quarter %.4f; want it served as well", rt[0], rt[1])
	}
}
