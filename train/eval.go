package train

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Metrics summarise one policy's run of one scenario.
type Metrics struct {
	Tasks int `json:"tasks"`
	// SLAAttainment is the fraction of tasks that finished within their SLA.
	SLAAttainment float64 `json:"sla_attainment"`
	// GoodputPerS is SLA-meeting tasks per second of the scenario, each
	// counted with its class weight.
	GoodputPerS float64 `json:"goodput_per_s"`
	// P50Ms and P99Ms are latency percentiles over every task; a task still
	// unfinished when the run ends counts with the time it had waited.
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MeanReward float64 `json:"mean_reward"`
	// PerClass is SLA attainment per class name.
	PerClass map[string]float64 `json:"per_class,omitempty"`
	// PerPeriod counts tasks and met SLAs per period of the scenario
	// (Scenario.Periods), nil for a scenario without interference.
	PerPeriod []PeriodCount `json:"per_period,omitempty"`
}

// Summarise computes the metrics of one run.
func Summarise(sc *Scenario, out []Outcome) Metrics {
	m := Metrics{Tasks: len(out), PerClass: map[string]float64{}}
	if len(out) == 0 {
		return m
	}
	lat := make([]float64, len(out))
	met, good, rew := 0, 0.0, 0.0
	classN := make([]int, len(sc.Classes))
	classMet := make([]int, len(sc.Classes))
	for i := range out {
		o := &out[i]
		lat[i] = o.LatencyMs()
		rew += o.Reward
		classN[o.Class]++
		if o.Met {
			met++
			good += o.Weight
			classMet[o.Class]++
		}
	}
	slices.Sort(lat)
	m.SLAAttainment = float64(met) / float64(len(out))
	m.GoodputPerS = good / sc.DurationS
	m.P50Ms = quantileSorted(lat, 0.5)
	m.P99Ms = quantileSorted(lat, 0.99)
	m.MeanReward = rew / float64(len(out))
	for i, c := range sc.Classes {
		if classN[i] > 0 {
			m.PerClass[c.Name] = float64(classMet[i]) / float64(classN[i])
		}
	}
	m.PerPeriod = countPeriods(sc, out)
	return m
}

// Evaluation is every policy's metrics on one scenario, all on the same
// arrivals.
type Evaluation struct {
	Scenario string
	Order    []string // policy names in run order
	Policies map[string]Metrics
	Periods  []Period // the scenario's periods, for WritePeriodMarkdown
}

// Evaluate runs each policy on the same tasks of sc (seed 0: the scenario's).
func Evaluate(sc *Scenario, seed int64, policies ...Policy) (*Evaluation, error) {
	return evaluate(sc, seed, EvalNode{}, policies)
}

// EvalNode is the simulated node an evaluation runs on. Its zero value is
// the calibrated node of the committed calibration.
type EvalNode struct {
	// Calibration is another node's (triage calibrate --out); nil is
	// DefaultCalibration.
	Calibration *Calibration
	// Vary is the probability that a run's node reads its kernel features
	// unlike the calibrated one (SimConfig.VaryNode).
	Vary float64
	// NoServiceTimes is an upstream that reports no service times
	// (SimConfig.NoServiceTimes).
	NoServiceTimes bool
	// EagerAccept is a service whose listen queue stays empty
	// (SimConfig.EagerAccept).
	EagerAccept bool
}

// evaluate is Evaluate on node; every policy runs on the same node, a
// varied one drawn from the seed.
func evaluate(sc *Scenario, seed int64, node EvalNode, policies []Policy) (*Evaluation, error) {
	if seed == 0 {
		seed = sc.Seed
	}
	tasks := sc.Arrivals(seed)
	ev := &Evaluation{Scenario: sc.Name, Policies: map[string]Metrics{}, Periods: sc.Periods()}
	for _, p := range policies {
		if _, dup := ev.Policies[p.Name()]; dup {
			return nil, fmt.Errorf("evaluating %s: policy %q given twice", sc.Name, p.Name())
		}
		out, err := RunTasks(sc, tasks, p, SimConfig{Seed: seed, VaryNode: node.Vary, Calibration: node.Calibration, NoServiceTimes: node.NoServiceTimes, EagerAccept: node.EagerAccept})
		if err != nil {
			return nil, err
		}
		ev.Order = append(ev.Order, p.Name())
		ev.Policies[p.Name()] = Summarise(sc, out)
	}
	return ev, nil
}

// jsonMetrics is the contract shape of one policy in `triage eval --json`.
type jsonMetrics struct {
	SLAAttainment float64 `json:"sla_attainment"`
	GoodputPerS   float64 `json:"goodput_per_s"`
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
}

// JSON is the one-line object of `triage eval --json`:
// {"scenario": NAME, "policies": {NAME: {sla_attainment, goodput_per_s, p50_ms, p99_ms}}}.
func (ev *Evaluation) JSON() ([]byte, error) {
	pol := make(map[string]jsonMetrics, len(ev.Policies))
	for name, m := range ev.Policies {
		pol[name] = jsonMetrics{round6(m.SLAAttainment), round6(m.GoodputPerS), round6(m.P50Ms), round6(m.P99Ms)}
	}
	return json.Marshal(struct {
		Scenario string                 `json:"scenario"`
		Policies map[string]jsonMetrics `json:"policies"`
	}{ev.Scenario, pol})
}

func round6(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return math.Round(x*1e6) / 1e6
}

// BestBaseline is the policy with the highest value of metric among those
// whose name does not start with exclude (the model's rows: "dqn",
// "dqn-unguarded", "dqn-ablated").
func (ev *Evaluation) BestBaseline(exclude string, metric func(Metrics) float64) (string, float64) {
	best, bv := "", math.Inf(-1)
	for _, n := range ev.Order {
		if strings.HasPrefix(n, exclude) {
			continue
		}
		if v := metric(ev.Policies[n]); v > bv {
			best, bv = n, v
		}
	}
	return best, bv
}

// WriteMarkdown writes the evaluation as a markdown table.
func (ev *Evaluation) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", ev.Scenario)
	b.WriteString("| policy | SLA attainment | weighted goodput (/s) | p50 (ms) | p99 (ms) | mean reward |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, n := range ev.Order {
		m := ev.Policies[n]
		fmt.Fprintf(&b, "| %s | %.4f | %.2f | %.1f | %.1f | %.4f |\n", n, m.SLAAttainment, m.GoodputPerS, m.P50Ms, m.P99Ms, m.MeanReward)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// EvaluateSeeds runs Evaluate on each seed (0: the scenario's own) and
// averages every metric over the seeds, so two policies within one seed's
// noise of each other can be told apart. Every policy still sees the same
// arrivals per seed.
func EvaluateSeeds(sc *Scenario, seeds []int64, policies ...Policy) (*Evaluation, error) {
	return EvaluateSeedsVaried(sc, seeds, 0, policies...)
}

// EvaluateSeedsVaried is EvaluateSeeds where each seed's run is, with
// probability vary, on a node that reads its kernel features unlike the
// calibrated one (SimConfig.VaryNode), the same node for every policy: what
// a policy keeps on machines other than the one the simulator was
// calibrated on.
func EvaluateSeedsVaried(sc *Scenario, seeds []int64, vary float64, policies ...Policy) (*Evaluation, error) {
	return EvaluateSeedsOn(sc, seeds, EvalNode{Vary: vary}, policies...)
}

// EvaluateSeedsOn is EvaluateSeeds on node: another node's calibration, a
// varied node, or both.
func EvaluateSeedsOn(sc *Scenario, seeds []int64, node EvalNode, policies ...Policy) (*Evaluation, error) {
	if len(seeds) == 0 {
		seeds = []int64{0}
	}
	var acc *Evaluation
	for _, seed := range seeds {
		ev, err := evaluate(sc, seed, node, policies)
		if err != nil {
			return nil, err
		}
		if acc == nil {
			acc = &Evaluation{Scenario: ev.Scenario, Order: ev.Order, Policies: map[string]Metrics{}, Periods: ev.Periods}
		}
		for n, m := range ev.Policies {
			a := acc.Policies[n]
			a.Tasks += m.Tasks
			a.SLAAttainment += m.SLAAttainment
			a.GoodputPerS += m.GoodputPerS
			a.P50Ms += m.P50Ms
			a.P99Ms += m.P99Ms
			a.MeanReward += m.MeanReward
			if a.PerClass == nil {
				a.PerClass = map[string]float64{}
			}
			for c, v := range m.PerClass {
				a.PerClass[c] += v
			}
			if a.PerPeriod == nil && m.PerPeriod != nil {
				a.PerPeriod = make([]PeriodCount, len(m.PerPeriod))
			}
			for k, c := range m.PerPeriod { // the same periods for every seed: pooled counts
				a.PerPeriod[k].Tasks += c.Tasks
				a.PerPeriod[k].Met += c.Met
				a.PerPeriod[k].Held += c.Held
			}
			acc.Policies[n] = a
		}
	}
	k := float64(len(seeds))
	for n, a := range acc.Policies {
		a.SLAAttainment /= k
		a.GoodputPerS /= k
		a.P50Ms /= k
		a.P99Ms /= k
		a.MeanReward /= k
		for c := range a.PerClass {
			a.PerClass[c] /= k
		}
		acc.Policies[n] = a
	}
	return acc, nil
}

// SeedList is the seeds `triage eval --seeds n` uses: the scenario's own,
// then 1000, 2000, ... (n−1)·1000.
func SeedList(n int) []int64 {
	s := []int64{0}
	for k := 1; k < n; k++ {
		s = append(s, int64(k)*1000)
	}
	return s
}
