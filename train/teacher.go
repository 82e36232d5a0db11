package train

import (
	"fmt"
	"math"
	"sync"
)

// teachers picks the demonstrator of each training scenario (DQNConfig.Teacher).
type teachers struct {
	name string
	best map[*Scenario]string // with "best": each scenario's best baseline
}

func newTeachers(scenarios []*Scenario, cfg DQNConfig) (*teachers, error) {
	t := &teachers{name: cfg.Teacher}
	if cfg.DemoEpisodes == 0 && cfg.DemoMargin == 0 {
		return t, nil
	}
	if t.name != "best" {
		if baselineNamed(scenarios[0], t.name) == nil {
			return nil, fmt.Errorf("teacher %q: not a baseline", t.name)
		}
		return t, nil
	}
	t.best = map[*Scenario]string{}
	var mu sync.Mutex
	err := eachScenario(scenarios, func(i int, sc *Scenario) error {
		capped := capDuration(sc, cfg.EpisodeSeconds)
		seed := -(cfg.Seed*104_729 + int64(i) + 1) // a seed training never uses
		tasks := capped.Arrivals(seed)
		best, bv := "", math.Inf(-1)
		for _, p := range Baselines(capped) {
			out, err := RunTasks(capped, tasks, p, SimConfig{Seed: seed})
			if err != nil {
				return err
			}
			if v := Summarise(capped, out).SLAAttainment; v > bv {
				best, bv = p.Name(), v
			}
		}
		mu.Lock()
		t.best[sc] = best
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("choosing the teachers: %w", err)
	}
	return t, nil
}

// of is a fresh demonstrator for sc (an episode may run a capped copy of a
// training scenario: its teacher is the original's).
func (t *teachers) of(sc *Scenario) Policy {
	name := t.name
	if t.best != nil {
		for orig, n := range t.best {
			if orig.Name == sc.Name {
				name = n
				break
			}
		}
	}
	return baselineNamed(sc, name)
}

// baselineNamed is a fresh instance of sc's baseline called name, nil if
// there is none.
func baselineNamed(sc *Scenario, name string) Policy {
	for _, p := range Baselines(sc) {
		if p.Name() == name {
			return p
		}
	}
	return nil
}
