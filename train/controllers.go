package train

import "math"

// The adaptive overload controllers a service team deploys instead of a
// learned policy, ported to this executor: each decides one priority 0..4
// per task at its arrival (priority 0, the background tier, is how they
// shed), reading only what a controller in the service measures itself:
// each task's queueing delay when it starts and its latency when it
// finishes (Observer). docs/controllers.md cites each algorithm's source,
// says how it was ported and how its parameters were chosen.
//
// Every controller keeps the same two tiers a service knows about its
// work: a task whose SLA is under UrgentMs is urgent (priority 4, always
// admitted, so no controller sheds the work a deadline-aware service
// would never shed); the rest is normal work (priority 2) that the
// controller admits or sheds to the background as its signal says.

// Resetter is a policy with state of its own (a controller), which a
// simulation resets before each run so that runs do not leak into each
// other.
type Resetter interface{ Reset() }

// tiers are the two levels a controller gives admitted work.
type tiers struct {
	UrgentMs float64 // SLA under which a task is urgent
}

func (c tiers) urgent(t *Task) bool { return t.SLAMs < c.UrgentMs }

// admitted is the level of an admitted task.
func (c tiers) admitted(t *Task) int {
	if c.urgent(t) {
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

// ControllerNames are the adaptive controllers, in report order.
var ControllerNames = []string{"codel-lifo", "shed-pi", "gradient2"}

// Controllers returns a fresh instance of every controller with its
// default (searched) parameters.
func Controllers() []Policy {
	return []Policy{NewCoDelLIFO(DefaultCoDelLIFO), NewShedPI(DefaultShedPI), NewGradient2(DefaultGradient2)}
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }
