package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Generated training scenarios. A policy that is to work on workloads it
// never saw is trained on workloads drawn from wide distributions rather
// than on a handful of files: arrival rates and shapes, class mixes, SLAs,
// cost distributions, tenants and weights, CPUs and workers, and
// interference episodes. The draw is seeded: one seed, one suite, on any
// machine.

// GenConfig shapes a generated suite; the zero value means defaults.
type GenConfig struct {
	// DurationS of each scenario (default 60).
	DurationS float64
	// Interference is the probability that a scenario has interference
	// episodes (default 0.6); NodeV2 the probability that its workers
	// share fewer CPUs than they are or do I/O (default 0.7).
	Interference float64
	NodeV2       float64
	// Workers are the worker counts a scenario's node is drawn from, each
	// as likely as its repeats make it (nil: DefaultGenWorkers). A suite
	// of larger nodes than training saw asks whether a policy carries
	// over to them (`triage eval --gen-workers`); the draw consumes the
	// same randomness whatever the list, so the rest of each scenario is
	// drawn as it would be.
	Workers []int
}

// DefaultGenWorkers are the worker counts of a default suite: 2 to 16, most
// often 4, the nodes the shipped model was trained on.
var DefaultGenWorkers = []int{2, 3, 4, 4, 4, 6, 6, 8, 8, 12, 16}

// ErrBadGenConfig is returned by GenConfig.Validate.
var ErrBadGenConfig = errors.New("bad generator config")

// Validate reports a config Generate cannot draw from: a worker count
// outside what a scenario may have, or too many of them.
func (c GenConfig) Validate() error {
	if len(c.Workers) > MaxGenWorkerChoices {
		return fmt.Errorf("%w: %d worker counts, at most %d", ErrBadGenConfig, len(c.Workers), MaxGenWorkerChoices)
	}
	for _, w := range c.Workers {
		if w < 1 || w > maxWorkers {
			return fmt.Errorf("%w: workers must be in [1, %d], got %d", ErrBadGenConfig, maxWorkers, w)
		}
	}
	return nil
}

// MaxGenWorkerChoices bounds GenConfig.Workers: a list, not a table.
const MaxGenWorkerChoices = 64

func (c GenConfig) withDefaults() GenConfig {
	if c.DurationS <= 0 {
		c.DurationS = 60
	}
	if c.Interference == 0 {
		c.Interference = 0.6
	}
	if c.NodeV2 == 0 {
		c.NodeV2 = 0.7
	}
	if len(c.Workers) == 0 {
		c.Workers = DefaultGenWorkers
	}
	return c
}

// Generate draws n scenarios from seed. A cfg that does not Validate
// draws from the default workers instead of its own.
func Generate(seed int64, n int, cfg GenConfig) []*Scenario {
	if cfg.Validate() != nil {
		cfg.Workers = nil
	}
	cfg = cfg.withDefaults()
	out := make([]*Scenario, 0, n)
	for i := 0; i < n; i++ {
		r := rand.New(rand.NewPCG(uint64(seed), uint64(i)+0x67656e))
		out = append(out, generateOne(r, fmt.Sprintf("gen-%d-%03d", seed, i), seed*1000+int64(i)+1, cfg))
	}
	return out
}

// logUniform draws from [lo, hi] uniformly in log space.
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return lo * math.Exp(r.Float64()*math.Log(hi/lo))
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func generateOne(r *rand.Rand, name string, seed int64, cfg GenConfig) *Scenario {
	for {
		sc := drawScenario(r, name, seed, cfg)
		if sc.Validate() == nil {
			return sc
		}
	}
}

func drawScenario(r *rand.Rand, name string, seed int64, cfg GenConfig) *Scenario {
	sc := &Scenario{Name: name, Seed: seed, DurationS: cfg.DurationS,
		Workers: pick(r, cfg.Workers...)}
	v2 := r.Float64() < cfg.NodeV2
	if v2 {
		cpus := max(1, int(math.Round(float64(sc.Workers)*(0.25+0.75*r.Float64()))))
		sc.Node = &Node{CPUs: cpus}
	}
	k := 1 + r.IntN(5)
	shares := make([]float64, k)
	sum := 0.0
	for i := range shares {
		shares[i] = r.ExpFloat64() + 0.05 // Dirichlet(1), kept off zero
		sum += shares[i]
	}
	acc := 0.0
	for i := 0; i < k; i++ {
		c := drawClass(r, i, v2)
		c.Share = round3(shares[i] / sum)
		if i == k-1 {
			c.Share = round3(1 - acc)
		}
		acc += c.Share
		sc.Classes = append(sc.Classes, c)
	}
	// Offered load relative to what the node can serve: CPUs or workers,
	// whichever is fewer (format v1: workers).
	capacity := float64(min(sc.Workers, sc.NodeCPUs()))
	rho := logUniform(r, 0.3, 1.4)
	rate := rho * capacity * 1000 / sc.MeanCostMs()
	// Keep an episode to a few thousand tasks: a faster stream of smaller
	// tasks is the same workload on another time scale, so stretch the
	// classes' costs and SLAs instead of simulating more arrivals.
	if rate > genMaxRate {
		stretch := rate / genMaxRate
		for i := range sc.Classes {
			sc.Classes[i].stretch(stretch)
		}
		rate = genMaxRate
	}
	sc.Arrival = Arrival{Process: "poisson", RatePerS: math.Round(rate*100) / 100}
	switch u := r.Float64(); {
	case u < 0.2:
		to := math.Round(rate*logUniform(r, 0.3, 2.5)*100) / 100
		sc.Arrival.RampToPerS = &to
	case u < 0.6:
		for b := 1 + r.IntN(4); b > 0; b-- {
			sc.Arrival.Bursts = append(sc.Arrival.Bursts, Burst{
				AtS: math.Round(r.Float64() * 0.85 * sc.DurationS), ForS: math.Round(2 + 8*r.Float64()),
				Factor: math.Round((1.5+2.5*r.Float64())*10) / 10})
		}
	}
	if r.Float64() < cfg.Interference {
		cpus := sc.NodeCPUs()
		for e := 1 + r.IntN(3); e > 0; e-- {
			ep := Episode{AtS: math.Round(r.Float64() * 0.8 * sc.DurationS), ForS: math.Round(5 + r.Float64()*0.4*sc.DurationS)}
			if r.Float64() < 0.55 {
				ep.Kind, ep.Threads = InterferenceCPU, 1+r.IntN(max(1, 3*cpus/2))
			} else {
				ep.Kind, ep.Writers = InterferenceIO, 1+r.IntN(16)
			}
			sc.Interference = append(sc.Interference, ep)
		}
	}
	return sc
}

// genMaxRate caps a generated scenario's base arrival rate (tasks/s).
const genMaxRate = 250

// stretch multiplies the class's SLA and every cost by f.
func (c *Class) stretch(f float64) {
	c.SLAMs = math.Round(c.SLAMs * f)
	for _, p := range []*float64{c.CostMs.Median, c.CostMs.P99, c.CostMs.Mean_, c.CostMs.Min, c.CostMs.Value} {
		if p != nil {
			*p = math.Round(*p*f*100) / 100
		}
	}
}

func drawClass(r *rand.Rand, i int, v2 bool) Class {
	sla := math.Round(logUniform(r, 5, 5000))
	median := math.Max(0.2, sla/logUniform(r, 2.5, 60))
	c := Class{Name: fmt.Sprintf("c%d", i), SLAMs: sla}
	f := func(x float64) *float64 { x = math.Round(x*100) / 100; return &x }
	switch r.IntN(4) {
	case 0, 1:
		c.CostMs = Dist{Kind: "lognormal", Median: f(median), P99: f(median * logUniform(r, 1.5, 6))}
	case 2:
		c.CostMs = Dist{Kind: "exponential", Mean_: f(median / math.Ln2)}
	default:
		if r.Float64() < 0.5 {
			alpha := 1.3 + 1.7*r.Float64()
			c.CostMs = Dist{Kind: "pareto", Min: f(median / math.Pow(2, 1/alpha)), Alpha: f(alpha)}
		} else {
			c.CostMs = Dist{Kind: "constant", Value: f(median)}
		}
	}
	if v2 && r.Float64() < 0.5 {
		c.IOShare = round3(0.1 + 0.8*r.Float64())
	}
	if r.Float64() < 0.4 {
		w := pick(r, 0.5, 2.0, 3.0)
		c.Weight = &w
	}
	if r.Float64() < 0.3 {
		c.Tenant = pick(r, "tenant-a", "tenant-b")
	}
	return c
}
