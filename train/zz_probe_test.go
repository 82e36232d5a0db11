package train_test

import (
	"fmt"
	"os"
	"testing"
	"strconv"

	"github.com/triage-agent/triage/policy/guard"
	"github.com/triage-agent/triage/train"
)

func TestZZProbe(t *testing.T) {
	path := os.Getenv("PROBE_SCENARIO")
	if path == "" {
		t.Skip("probe")
	}
	sess := loadDefaultModel(t)
	b, _ := os.ReadFile(path)
	sc, err := train.ParseScenario(b)
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := train.ModelRows(sess, guard.DefaultController, guard.DefaultConfig(), true, train.AdaptiveOrder)
	if err != nil {
		t.Fatal(err)
	}
	lift, _, _ := train.ModelRows(sess, guard.DefaultController, guard.DefaultConfig(), false, train.AdaptiveOrder)
	liftTo, _ := strconv.Atoi(os.Getenv("PROBE_LIFT"))
	liftClass := os.Getenv("PROBE_CLASS")
	pols := append(rows, train.Baselines(sc)...)
	pols = append(pols, &lifted{GuardedPolicy: lift[0].(*train.GuardedPolicy), class: liftClass, to: liftTo, sc: sc})
	for _, p := range pols {
		if n := p.Name(); n != "dqn" && n != "lifted" && n != "reserve-rule" {
			continue
		}
		type agg struct{ n, met, started, held, short int; wait, svc float64; lv [5]int; missWait, missSvc int }
		per := map[string]*agg{}
		for _, seed := range train.SeedList(8) {
			tasks := sc.Arrivals(seed)
			out, err := train.RunTasks(sc, tasks, p, train.SimConfig{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range out {
				ph := int(o.ArrivalMs / 1000 / 25)
				k := fmt.Sprintf("%s/%d", sc.Classes[o.Class].Name, ph)
				a := per[k]
				if a == nil {
					a = &agg{}
					per[k] = a
				}
				a.n++
				a.lv[o.Level]++
				if o.Met {
					a.met++
				} else if o.Started {
					if o.StartMs-o.ArrivalMs > o.SLAMs/2 {
						a.missWait++
					} else {
						a.missSvc++
					}
				}
				if o.Started {
					a.started++
					a.wait += o.StartMs - o.ArrivalMs
					a.svc += o.FinishMs - o.StartMs
				}
				if o.HeldBack {
					a.held++
				}
				if o.ShortStart {
					a.short++
				}
			}
		}
		for _, c := range sc.Classes {
			for ph := 0; ph < 5; ph++ {
				a := per[fmt.Sprintf("%s/%d", c.Name, ph)]
				if a == nil {
					continue
				}
				fmt.Printf("%-12s %-15s ph%d n=%5d met=%.3f lv=%v wait=%.1f svc=%.1f missWait=%d missSvc=%d short=%d\n", p.Name(), c.Name, ph, a.n, float64(a.met)/float64(a.n), a.lv, a.wait/float64(a.started), a.svc/float64(a.started), a.missWait, a.missSvc, a.short)
			}
		}
	}
}

type lifted struct {
	*train.GuardedPolicy
	class string
	to    int
	sc    *train.Scenario
}

func (l *lifted) Name() string { return "lifted" }
func (l *lifted) Assign(t *train.Task, v *train.NodeView) (int, float64, error) {
	lv, k, err := l.GuardedPolicy.Assign(t, v)
	if l.sc.Classes[t.Class].Name == l.class && lv == 0 {
		lv = l.to
	}
	return lv, k, err
}
