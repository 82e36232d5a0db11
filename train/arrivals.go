package train

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Task is one arrival of a scenario run, generated from the seed so that
// every policy sees exactly the same tasks.
type Task struct {
	ID         int
	ArrivalMs  float64
	Class      int     // index into Scenario.Classes
	CostMs     float64 // true service time
	ExpectedMs float64 // what the descriptor says: the true cost with estimation error
	SLAMs      float64
	Weight     float64
	IOShare    float64 // the part of CostMs that is synchronous I/O (format v2)
}

// DeadlineMs is when the task must finish to meet its SLA.
func (t *Task) DeadlineMs() float64 { return t.ArrivalMs + t.SLAMs }

// cpuMs is the CPU part of the task's true cost: what is not synchronous
// I/O. The simulator runs it first (its waking part, then the rest).
func (t *Task) cpuMs() float64 { return t.CostMs * (1 - t.IOShare) }

// costEstimateSigma is the log-normal error of the descriptor's cost
// estimate: upstream services know roughly, not exactly, what a task costs
// (σ=0.3 puts 68% of estimates within ±35%). SJF and the DQN both see only
// the estimate.
const costEstimateSigma = 0.3

// Arrivals generates the tasks of one run. Two streams are seeded apart so
// the arrival times do not change when a class's cost distribution does.
func (sc *Scenario) Arrivals(seed int64) []Task {
	times := sc.arrivalTimes(rand.New(rand.NewPCG(uint64(seed), 0x7472696167650001)))
	r := rand.New(rand.NewPCG(uint64(seed), 0x7472696167650002))
	cum := make([]float64, len(sc.Classes))
	s := 0.0
	for i := range sc.Classes {
		s += sc.Classes[i].Share
		cum[i] = s
	}
	tasks := make([]Task, len(times))
	for i, at := range times {
		u := r.Float64() * s
		ci := sort.SearchFloat64s(cum, u)
		if ci >= len(cum) {
			ci = len(cum) - 1
		}
		c := &sc.Classes[ci]
		cost := c.CostMs.Sample(r)
		tasks[i] = Task{
			ID: i, ArrivalMs: at, Class: ci, CostMs: cost,
			ExpectedMs: cost * math.Exp(costEstimateSigma*r.NormFloat64()),
			SLAMs:      c.SLAMs, Weight: c.W(), IOShare: c.IOShare,
		}
	}
	return tasks
}

// arrivalTimes draws a non-homogeneous Poisson process by thinning, segment
// by segment: between burst edges the rate is linear in t, so its maximum is
// at one end and the thinning bound stays tight even with many bursts.
func (sc *Scenario) arrivalTimes(r *rand.Rand) []float64 {
	a := &sc.Arrival
	edges := []float64{0, sc.DurationS}
	for _, b := range a.Bursts {
		edges = append(edges, b.AtS, math.Min(b.AtS+b.ForS, sc.DurationS))
	}
	sort.Float64s(edges)
	var out []float64
	for i := 0; i+1 < len(edges); i++ {
		lo, hi := edges[i], edges[i+1]
		if hi <= lo {
			continue
		}
		mid := (lo + hi) / 2
		// The burst factor is constant on the segment; sample it at mid.
		bound := math.Max(a.RateAt(lo, sc.DurationS), a.RateAt(math.Nextafter(hi, lo), sc.DurationS))
		bound = math.Max(bound, a.RateAt(mid, sc.DurationS))
		if bound <= 0 {
			continue
		}
		t := lo
		for {
			t += r.ExpFloat64() / bound
			if t >= hi {
				break
			}
			if r.Float64()*bound <= a.RateAt(t, sc.DurationS) {
				out = append(out, t*1000)
			}
		}
	}
	return out
}
