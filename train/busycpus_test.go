package train

import (
	"testing"

	"github.com/triage-agent/triage/policy"
)

// backgroundServed sends every task to the background and tells the
// executor the reserve the agent serves, knowing the node's CPUs or not
// (an agent whose policy.ReserveOnBusyCPUs has no CPU count to go by).
type backgroundServed struct{ knowsCPUs bool }

func (p backgroundServed) Name() string { return "background-served" }
func (p backgroundServed) Assign(t *Task, v *NodeView) (int, float64, error) {
	return 0, 0, nil
}
func (p backgroundServed) Reserve(v *NodeView) float64 {
	if !p.knowsCPUs {
		blind := *v
		blind.CPUs = 0
		return servedReserve(&blind, nil)
	}
	return servedReserve(v, nil)
}

// A batch tier on 6 workers and 4 CPUs beside a neighbour's 4 spinning
// threads for 20 s: the run queue says the CPUs are oversubscribed and no
// foreground is left, so the served reserve holds 2 workers (those beyond
// the CPUs) where the half held 3. Three tasks beside four spinners get
// 1.71 CPUs of the 1.95 the batch needs, four get 2.0 (measured: the
// tier's SLAs met 0.8950 against 0.8367, 4 tasks at once against 3).
func TestBackgroundRunsOneTaskPerCPUOnceTheForegroundHasGone(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"batch-beside-spinners","seed":9,"duration_s":40,"workers":6,"node":{"cpus":4},
	 "arrival":{"process":"poisson","rate_per_s":8.5},
	 "interference":[{"kind":"cpu","at_s":10,"for_s":20,"threads":4}],
	 "classes":[{"name":"batch","share":1,"sla_ms":929,"cost_ms":{"dist":"constant","value":229}}]}`)
	var busy [2]int
	var met [2]float64
	for k, p := range []Policy{backgroundServed{knowsCPUs: true}, backgroundServed{}} {
		out, err := Run(sc, p, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		busy[k] = mostAtOnce(out, func(o *Outcome) bool { return o.StartMs >= 15_000 && o.FinishMs <= 30_000 })
		met[k] = Summarise(sc, out).SLAAttainment
	}
	t.Logf("CPUs known: %d at once in the storm, %.4f met; unknown: %d, %.4f", busy[0], met[0], busy[1], met[1])
	if want := 6 - policy.ReserveWorkers(policy.ContendedReserve, 6); busy[1] != want {
		t.Errorf("CPUs unknown: %d background tasks at once in the storm, want the half's %d", busy[1], want)
	}
	if busy[0] != 4 {
		t.Errorf("CPUs known: %d background tasks at once in the storm, want one per CPU, 4", busy[0])
	}
	if met[0] < met[1]+0.02 {
		t.Errorf("SLA attainment: %.4f with the CPUs known, %.4f without; want 2 points more", met[0], met[1])
	}
}
