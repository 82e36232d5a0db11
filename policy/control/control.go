// Package control holds the adaptive overload controllers a service team
// deploys instead of a learned policy, ported to triage's executor
// contract: each decides one priority 0..4 per task at its arrival
// (priority 0, the background tier, is how they shed) and a key within
// the level, reading only what a controller in the service measures
// itself: the queueing delay and latency of the tasks that finished.
//
// They are baselines in the simulator and on the real workers of `triage
// bench e2e`, and the agent's guard: where the policy network is unsure,
// the agent decides with a controller instead. docs/controllers.md cites
// each algorithm's source, says how it was ported and how its parameters
// were chosen.
package control

import (
	"fmt"
	"math"
)

// Task is what a controller knows of a task: its arrival (the time of the
// decision), its SLA and the descriptor's expected cost, in ms.
type Task struct {
	ArrivalMs, SLAMs, ExpectedMs float64
}

// DeadlineMs is when the task must finish to meet its SLA.
func (t *Task) DeadlineMs() float64 { return t.ArrivalMs + t.SLAMs }

// Controller is one adaptive controller. It is not safe for concurrent
// use: its owner serialises Decide and Observe.
type Controller interface {
	Name() string
	// Decide is the priority and the key within the level of a task
	// arriving now (t.ArrivalMs).
	Decide(t *Task) (level int, key float64)
	// Observe is a finished task: it started at startMs and finished at
	// finishMs (executor clock, ms). A controller learns its queueing delay
	// (start − arrival) and latency (finish − arrival) from it.
	Observe(t *Task, startMs, finishMs float64)
	// Reset forgets every measurement.
	Reset()
}

// Names are the adaptive controllers, in report order.
var Names = []string{"codel-lifo", "shed-pi", "gradient2"}

// GuardNames are what New accepts: the adaptive controllers and the
// static reserve rule.
var GuardNames = append([]string{"reserve-rule"}, Names...)

// New returns a fresh controller by name with its default parameters.
func New(name string) (Controller, error) {
	switch name {
	case "reserve-rule":
		return NewReserve(DefaultReserve), nil
	case "codel-lifo":
		return NewCoDelLIFO(DefaultCoDelLIFO), nil
	case "shed-pi":
		return NewShedPI(DefaultShedPI), nil
	case "gradient2":
		return NewGradient2(DefaultGradient2), nil
	}
	return nil, fmt.Errorf("control: no controller %q (%v)", name, GuardNames)
}

// Tiers are the two classes of work every controller knows: a task whose
// SLA is under UrgentMs is urgent (priority 4, always admitted: no
// controller sheds the work a deadline-aware service would never shed);
// the rest is normal work (priority 2) that the controller admits or
// sheds to the background as its signal says.
type Tiers struct {
	UrgentMs float64
}

// Urgent reports whether t is urgent.
func (c Tiers) Urgent(t *Task) bool { return t.SLAMs < c.UrgentMs }

// admitted is the level of an admitted task.
func (c Tiers) admitted(t *Task) int {
	if c.Urgent(t) {
		return 4
	}
	return 2
}

// ewma is an exponentially weighted mean over samples.
type ewma struct {
	alpha float64
	v     float64
	n     int
}

func (e *ewma) add(x float64) {
	if e.n == 0 {
		e.v = x
	} else {
		e.v += e.alpha * (x - e.v)
	}
	e.n++
}

// period is a clock of fixed periods over the executor's time: it says
// when a period has ended so a controller can update once per period.
type period struct {
	lenMs float64
	end   float64
}

// due reports whether now is past the current period's end, and starts
// the next one when it is.
func (p *period) due(nowMs float64) bool {
	if p.end == 0 {
		p.end = nowMs + p.lenMs
		return false
	}
	if nowMs < p.end {
		return false
	}
	p.end = nowMs + p.lenMs
	return true
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }
