package train

import (
	"fmt"

	"github.com/triage-agent/triage/policy/control"
	"sort"
	"sync"
)

// The controllers' parameters are chosen by a documented search on
// generated scenarios (never the files results are reported on): every
// candidate of a grid runs on the same arrivals of every scenario, and the
// candidate with the best mean SLA attainment wins (docs/controllers.md
// has the grids and the results).

// Candidate is one parameter setting of a controller.
type Candidate struct {
	Label string
	New   func() Policy
}

// TuneResult is one candidate's score.
type TuneResult struct {
	Label         string
	SLAAttainment float64 // mean over the scenarios
	GoodputPerS   float64
}

// Tune scores every candidate on every scenario (its own seed) and returns
// them best first. Scenarios run in parallel, candidates in order.
func Tune(scenarios []*Scenario, cands []Candidate) ([]TuneResult, error) {
	res := make([]TuneResult, len(cands))
	for i, c := range cands {
		res[i].Label = c.Label
	}
	var mu sync.Mutex
	err := eachScenario(scenarios, func(_ int, sc *Scenario) error {
		tasks := sc.Arrivals(sc.Seed)
		for i, c := range cands {
			out, err := RunTasks(sc, tasks, c.New(), SimConfig{})
			if err != nil {
				return fmt.Errorf("tuning %s on %s: %w", c.Label, sc.Name, err)
			}
			m := Summarise(sc, out)
			mu.Lock()
			res[i].SLAAttainment += m.SLAAttainment / float64(len(scenarios))
			res[i].GoodputPerS += m.GoodputPerS / float64(len(scenarios))
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(res, func(a, b int) bool { return res[a].SLAAttainment > res[b].SLAAttainment })
	return res, nil
}

// ControllerGrids are the searched grids of each controller.
func ControllerGrids() map[string][]Candidate {
	g := map[string][]Candidate{}
	add := func(name, label string, c func() control.Controller) {
		g[name] = append(g[name], Candidate{Label: label, New: func() Policy { return Controller{c()} }})
	}
	// The grid is wide enough that no winner sits on its edge (checked in
	// docs/controllers.md): SLA thresholds from 20 ms to 1 s, each
	// controller's own knobs a decade either side of its paper's default.
	for _, u := range []float64{20, 50, 100, 200, 500, 1000} {
		tiers := control.Tiers{UrgentMs: u}
		add("reserve-rule", fmt.Sprintf("urgent=%g", u), func() control.Controller { return control.NewReserve(tiers) })
		for _, target := range []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 20} {
			for _, interval := range []float64{5, 10, 20, 50, 100, 200} {
				p := control.CoDelLIFOParams{Tiers: tiers, TargetMs: target, IntervalMs: interval}
				add("codel-lifo", fmt.Sprintf("urgent=%g target=%g interval=%g", u, target, interval), func() control.Controller { return control.NewCoDelLIFO(p) })
			}
		}
		for _, target := range []float64{1, 2, 5, 10, 20, 50} {
			for _, gains := range [][2]float64{{0.02, 0.005}, {0.05, 0.01}, {0.1, 0.02}, {0.2, 0.05}, {0.5, 0.2}, {1, 0.5}} {
				p := control.DefaultShedPI
				p.Tiers, p.TargetMs, p.Kp, p.Ki = tiers, target, gains[0], gains[1]
				add("shed-pi", fmt.Sprintf("urgent=%g target=%g kp=%g ki=%g", u, target, gains[0], gains[1]), func() control.Controller { return control.NewShedPI(p) })
			}
		}
		for _, tol := range []float64{1, 1.05, 1.1, 1.2, 1.5} {
			for _, q := range []float64{1, 4} {
				for _, initial := range []float64{1, 2, 4, 20} {
					p := control.DefaultGradient2
					p.Tiers, p.Tolerance, p.QueueSize, p.InitialLimit = tiers, tol, q, initial
					add("gradient2", fmt.Sprintf("urgent=%g tolerance=%g queue=%g initial=%g", u, tol, q, initial), func() control.Controller { return control.NewGradient2(p) })
				}
			}
		}
	}
	return g
}
