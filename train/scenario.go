// Package train is the offline side of triage: a deterministic simulator of
// one node driven by scenario files, the reward of DESIGN.md, the baselines a
// policy must beat, a DQN trainer (double DQN, prioritized replay, target
// network) and the evaluation that compares them on the same arrivals.
package train

import (
	"errors"
	"fmt"
	"math"
)

// ErrBadScenario wraps every reason a scenario file is refused.
var ErrBadScenario = errors.New("bad scenario")

// maxScenarioBytes bounds what LoadScenario reads: a scenario is a few
// hundred bytes, so anything near this is not one.
const maxScenarioBytes = 1 << 20

// Limits that keep a hostile or mistyped file from asking the simulator for
// unbounded work or memory.
const (
	maxWorkers   = 4096
	maxDuration  = 24 * 3600
	maxRate      = 1_000_000
	maxClasses   = 64
	maxBursts    = 1024
	maxArrivals  = 50_000_000
	shareEpsilon = 1e-3 // shares must add up to 1 within this
)

// Scenario is one workload file (see ../shared/scenarios/README.md).
type Scenario struct {
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Seed        int64   `json:"seed"`
	DurationS   float64 `json:"duration_s"`
	Workers     int     `json:"workers"`
	Arrival     Arrival `json:"arrival"`
	Classes     []Class `json:"classes"`
	// Format v2 (scenario_node.go): the node around the executor.
	Node         *Node     `json:"node,omitempty"`
	Interference []Episode `json:"interference,omitempty"`
}

// Arrival is the arrival process: Poisson at RatePerS, optionally ramping
// linearly to RampToPerS over the run, multiplied by each active burst.
type Arrival struct {
	Process    string   `json:"process"`
	RatePerS   float64  `json:"rate_per_s"`
	RampToPerS *float64 `json:"ramp_to_per_s,omitempty"`
	Bursts     []Burst  `json:"bursts,omitempty"`
}

// Burst multiplies the arrival rate by Factor from AtS for ForS seconds.
type Burst struct {
	AtS    float64 `json:"at_s"`
	ForS   float64 `json:"for_s"`
	Factor float64 `json:"factor"`
}

// Class is one kind of task.
type Class struct {
	Name   string   `json:"name"`
	Share  float64  `json:"share"`
	SLAMs  float64  `json:"sla_ms"`
	CostMs Dist     `json:"cost_ms"`
	Tenant string   `json:"tenant,omitempty"`
	Weight *float64 `json:"weight,omitempty"`
	// IOShare is the fraction of the cost that is synchronous block I/O
	// (format v2; default 0): it stretches with the disk's contention, the
	// rest with the CPUs'.
	IOShare float64 `json:"io_share,omitempty"`
}

// W is the class weight: the value of meeting its SLA (default 1).
func (c *Class) W() float64 {
	if c.Weight == nil {
		return 1
	}
	return *c.Weight
}

// LoadScenario reads and validates one scenario file.
func LoadScenario(path string) (*Scenario, error) {
	return loadFile(path, "scenario", maxScenarioBytes, ParseScenario)
}

// ParseScenario decodes a scenario strictly (unknown fields are errors) and
// validates it.
func ParseScenario(b []byte) (*Scenario, error) {
	return parseValid[Scenario](b, maxScenarioBytes, ErrBadScenario)
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadScenario}, args...)...)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Validate checks every field and says which one is wrong.
func (sc *Scenario) Validate() error {
	if sc.Name == "" {
		return bad("missing name")
	}
	if !finite(sc.DurationS) || sc.DurationS <= 0 || sc.DurationS > maxDuration {
		return bad("duration_s must be in (0, %d], got %v", maxDuration, sc.DurationS)
	}
	if sc.Workers <= 0 || sc.Workers > maxWorkers {
		return bad("workers must be in [1, %d], got %d", maxWorkers, sc.Workers)
	}
	if err := sc.Arrival.validate(sc.DurationS); err != nil {
		return err
	}
	if len(sc.Classes) == 0 {
		return bad("missing classes")
	}
	if len(sc.Classes) > maxClasses {
		return bad("%d classes, at most %d", len(sc.Classes), maxClasses)
	}
	sum := 0.0
	seen := map[string]bool{}
	for i := range sc.Classes {
		c := &sc.Classes[i]
		if c.Name == "" {
			return bad("class %d: missing name", i)
		}
		if seen[c.Name] {
			return bad("class %q appears twice", c.Name)
		}
		seen[c.Name] = true
		if !finite(c.Share) || c.Share <= 0 || c.Share > 1 {
			return bad("class %q: share must be in (0, 1], got %v", c.Name, c.Share)
		}
		sum += c.Share
		if !finite(c.SLAMs) || c.SLAMs <= 0 {
			return bad("class %q: sla_ms must be positive, got %v", c.Name, c.SLAMs)
		}
		if c.Weight != nil && (!finite(*c.Weight) || *c.Weight < 0) {
			return bad("class %q: weight must be a non-negative number, got %v", c.Name, *c.Weight)
		}
		if err := c.CostMs.validate(); err != nil {
			return fmt.Errorf("class %q: cost_ms: %w", c.Name, err)
		}
	}
	if math.Abs(sum-1) > shareEpsilon {
		return bad("class shares add up to %.6g, want 1", sum)
	}
	if err := sc.validateNode(); err != nil {
		return err
	}
	if expected := sc.Arrival.maxRate() * sc.DurationS; expected > maxArrivals {
		return bad("about %.0f arrivals, at most %d", expected, maxArrivals)
	}
	return nil
}

func (a *Arrival) validate(duration float64) error {
	if a.Process == "" {
		return bad("arrival: missing process")
	}
	if a.Process != "poisson" {
		return bad("arrival: process %q is not supported (only poisson)", a.Process)
	}
	if !finite(a.RatePerS) || a.RatePerS <= 0 || a.RatePerS > maxRate {
		return bad("arrival: rate_per_s must be in (0, %d], got %v", maxRate, a.RatePerS)
	}
	if a.RampToPerS != nil {
		r := *a.RampToPerS
		if !finite(r) || r < 0 || r > maxRate {
			return bad("arrival: ramp_to_per_s must be in [0, %d], got %v", maxRate, r)
		}
	}
	if len(a.Bursts) > maxBursts {
		return bad("arrival: %d bursts, at most %d", len(a.Bursts), maxBursts)
	}
	for i, b := range a.Bursts {
		if !finite(b.AtS) || b.AtS < 0 || b.AtS > duration {
			return bad("arrival: burst %d: at_s must be in [0, duration_s], got %v", i, b.AtS)
		}
		if !finite(b.ForS) || b.ForS <= 0 {
			return bad("arrival: burst %d: for_s must be positive, got %v", i, b.ForS)
		}
		if !finite(b.Factor) || b.Factor < 0 || b.Factor > 1000 {
			return bad("arrival: burst %d: factor must be in [0, 1000], got %v", i, b.Factor)
		}
	}
	return nil
}

// RateAt is the arrival rate (tasks/s) at time t seconds into the run.
func (a *Arrival) RateAt(t, duration float64) float64 {
	r := a.RatePerS
	if a.RampToPerS != nil && duration > 0 {
		f := math.Min(math.Max(t/duration, 0), 1)
		r += (*a.RampToPerS - a.RatePerS) * f
	}
	for _, b := range a.Bursts {
		if t >= b.AtS && t < b.AtS+b.ForS {
			r *= b.Factor
		}
	}
	return r
}

// InBurst reports whether t falls inside a burst that raises the rate.
func (a *Arrival) InBurst(t float64) bool {
	for _, b := range a.Bursts {
		if t >= b.AtS && t < b.AtS+b.ForS && b.Factor > 1 {
			return true
		}
	}
	return false
}

// maxRate bounds RateAt over the run, for thinning.
func (a *Arrival) maxRate() float64 {
	r := a.RatePerS
	if a.RampToPerS != nil && *a.RampToPerS > r {
		r = *a.RampToPerS
	}
	// Overlapping bursts multiply, so the bound is the product of all
	// factors above 1.
	f := 1.0
	for _, b := range a.Bursts {
		if b.Factor > 1 {
			f *= b.Factor
		}
	}
	return r * f
}

// MeanCostMs is the mix's mean service time.
func (sc *Scenario) MeanCostMs() float64 {
	m := 0.0
	for i := range sc.Classes {
		m += sc.Classes[i].Share * sc.Classes[i].CostMs.Mean()
	}
	return m
}

// LoadAt is the offered load at time t: rate × mean cost over the
// executor's capacity, its workers, or on a node whose CPUs the workers
// share with neighbour threads (format v2) their fair share of the CPUs
// when all are busy. Above 1 the node is in the reward's peak phase.
func (sc *Scenario) LoadAt(t float64) float64 {
	return sc.Arrival.RateAt(t, sc.DurationS) * sc.MeanCostMs() / 1000 / sc.capacityAt(t)
}

// capacityAt is the executor's capacity in worker-equivalents at t seconds.
func (sc *Scenario) capacityAt(t float64) float64 {
	w := float64(sc.Workers)
	threads, _ := sc.NeighbourLoad(t)
	runnable := w + float64(threads)
	if cpus := float64(sc.NodeCPUs()); runnable > cpus {
		return w * cpus / runnable
	}
	return w
}
