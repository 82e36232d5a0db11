package train

import (
	"testing"

	"github.com/triage-agent/triage/policy/control"
)

// shedShare is the share of the non-urgent tasks a policy sent to the
// background tier in a run of sc.
func shedShare(t *testing.T, sc *Scenario, p Policy) float64 {
	t.Helper()
	out, err := Run(sc, p, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	shed, n := 0, 0
	for i := range out {
		if out[i].SLAMs >= 50 {
			n++
			if out[i].Level == 0 {
				shed++
			}
		}
	}
	return float64(shed) / float64(n)
}

// Each controller reads its own measurements: on a lightly loaded node it
// admits the normal work, under overload it sheds much of it to the
// background tier.
func TestControllersShedUnderOverloadOnly(t *testing.T) {
	light, overload := tinyScenario(t, 20), tinyScenario(t, 200)
	for _, p := range Controllers() {
		l, o := shedShare(t, light, p), shedShare(t, overload, p)
		t.Logf("%s: sheds %.3f of normal work at light load, %.3f in overload", p.Name(), l, o)
		if l > 0.1 || o < 0.3 {
			t.Errorf("%s: sheds %.3f at light load (want ≤ 0.1) and %.3f in overload (want ≥ 0.3)", p.Name(), l, o)
		}
	}
}

// A controller's state does not leak from one run into the next.
func TestControllersResetBetweenRuns(t *testing.T) {
	sc := tinyScenario(t, 200)
	for _, p := range Controllers() {
		a, err := Run(sc, p, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Run(sc, p, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if a[i].Level != b[i].Level || a[i].FinishMs != b[i].FinishMs {
				t.Fatalf("%s: task %d differs between two runs of the same arrivals", p.Name(), i)
			}
		}
	}
}

// CoDel's adaptive LIFO: once the queue stands, newer tasks go first
// within their level.
func TestCoDelServesNewestFirstWhenOverloaded(t *testing.T) {
	out, err := Run(tinyScenario(t, 200), Controller{control.NewCoDelLIFO(control.DefaultCoDelLIFO)}, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	lifo := 0
	for i := range out {
		if out[i].Key < 0 {
			lifo++
		}
	}
	if lifo == 0 {
		t.Fatal("no task was ever keyed newest-first under overload")
	}
}
