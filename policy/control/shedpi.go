package control

import (
	"math"
	"slices"
)

// ShedPI sheds by priority against measured queueing delay, as Uber's
// Cinnamon (a PI controller on queueing delay moving a priority threshold;
// Uber engineering blog, 2023) and WeChat's DAGOR (an admission level over
// business priority, moved by the average queueing time; Zhou et al.,
// SoCC 2018) do. Every task has a business priority from its SLA (the
// tighter, the higher: 4 under UrgentMs, 3 under 4×, 2 under 20×, else 1);
// tasks below the threshold are shed to the background tier, the rest run
// at their priority. Once a period the controller reads the queueing delay
// of the admitted tasks that finished (a high percentile, as Cinnamon) and
// moves the threshold by a PI step on its error against the target.
// Urgent work (priority 4) is never shed.
type ShedPI struct {
	p ShedPIParams

	per       period
	threshold float64 // tasks with priority < threshold are shed
	prevErr   float64
	delays    []float64 // queueing delays of admitted tasks this period
}

// ShedPIParams are the controller's parameters.
type ShedPIParams struct {
	Tiers
	TargetMs   float64 // queueing delay the controller holds
	PeriodMs   float64 // how often the threshold moves
	Percentile float64 // of the period's delays that is compared with the target
	Kp, Ki     float64 // PI gains, per unit of error relative to the target
}

// DefaultShedPI are the parameters chosen by the search in docs/controllers.md.
var DefaultShedPI = ShedPIParams{Tiers: Tiers{UrgentMs: 500}, TargetMs: 1, PeriodMs: 100, Percentile: 0.9, Kp: 0.05, Ki: 0.01}

// NewShedPI returns the controller with parameters p.
func NewShedPI(p ShedPIParams) *ShedPI {
	return &ShedPI{p: p, threshold: 1, per: period{lenMs: p.PeriodMs}}
}

func (*ShedPI) Name() string { return "shed-pi" }

func (c *ShedPI) Reset() { *c = *NewShedPI(c.p) }

// priority is a task's business priority, 1..4, from its SLA.
func (c *ShedPI) priority(t *Task) int {
	switch u := c.p.UrgentMs; {
	case t.SLAMs < u:
		return 4
	case t.SLAMs < 4*u:
		return 3
	case t.SLAMs < 20*u:
		return 2
	}
	return 1
}

// admits reports whether a task of priority p runs at its priority.
func (c *ShedPI) admits(p int) bool { return p == 4 || float64(p) >= c.threshold }

func (c *ShedPI) Decide(t *Task) (int, float64) {
	c.update(t.ArrivalMs)
	if p := c.priority(t); c.admits(p) {
		return p, t.DeadlineMs()
	}
	return 0, t.DeadlineMs()
}

// update moves the threshold once a period (velocity-form PI: the step is
// Kp times the change of the error plus Ki times the error). A period in
// which no admitted task finished reads as no queueing.
func (c *ShedPI) update(now float64) {
	if !c.per.due(now) {
		return
	}
	d := 0.0
	if len(c.delays) > 0 {
		slices.Sort(c.delays)
		d = c.delays[min(len(c.delays)-1, int(math.Ceil(c.p.Percentile*float64(len(c.delays))))-1)]
	}
	c.delays = c.delays[:0]
	e := math.Min((d-c.p.TargetMs)/c.p.TargetMs, 10) // one pathological period must not slam the threshold
	c.threshold = clamp(c.threshold+c.p.Kp*(e-c.prevErr)+c.p.Ki*e, 1, 4)
	c.prevErr = e
}

func (c *ShedPI) Observe(t *Task, startMs, finishMs float64) {
	c.update(finishMs)
	if c.admits(c.priority(t)) {
		c.delays = append(c.delays, startMs-t.ArrivalMs)
	}
}
