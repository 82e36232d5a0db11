package control

// CoDelLIFO is CoDel with adaptive LIFO, as Meta runs its request queues
// ("Fail at scale", Maurer, ACM Queue 2015; folly/executors/Codel.cpp):
// each queue watches the minimum queueing delay of its requests over an
// interval; when even that minimum stood above the target for the
// interval, the queue is standing and overloaded. While overloaded it
// serves newest first (adaptive LIFO: the newest requests are the ones
// whose callers still wait) and sloughs off what would wait more than
// twice the target.
//
// Ported: one CoDel per tier (urgent and normal work are separate queues
// in a service), fed with each finished task's queueing delay; folly's
// rule, that the first delay of an interval resets the minimum and the
// interval's end sets the verdict, is kept. Decisions are at arrival:
// while a tier is overloaded its arrivals are keyed newest first within
// their level, and an arriving normal task is sloughed (background tier)
// when the tier's standing delay, its interval minimum, is above the
// slough timeout. Urgent work is never shed.
type CoDelLIFO struct {
	p            CoDelLIFOParams
	urgent, norm codel
}

// CoDelLIFOParams are the controller's parameters.
type CoDelLIFOParams struct {
	Tiers
	TargetMs   float64 // folly's codel_target_delay (default 5 ms); the slough timeout is twice it
	IntervalMs float64 // folly's codel_interval (default 100 ms)
}

// DefaultCoDelLIFO are the parameters chosen by the search in
// docs/controllers.md on generated scenarios (folly's 5 ms target and
// 100 ms interval were the starting point): a target at the grid's floor,
// so a normal task is sloughed whenever its tier's queue stands at all.
var DefaultCoDelLIFO = CoDelLIFOParams{Tiers: Tiers{UrgentMs: 500}, TargetMs: 0.1, IntervalMs: 10}

// NewCoDelLIFO returns the controller with parameters p.
func NewCoDelLIFO(p CoDelLIFOParams) *CoDelLIFO { return &CoDelLIFO{p: p} }

func (*CoDelLIFO) Name() string { return "codel-lifo" }

func (c *CoDelLIFO) Reset() { *c = CoDelLIFO{p: c.p} }

func (c *CoDelLIFO) tier(t *Task) *codel {
	if c.p.Urgent(t) {
		return &c.urgent
	}
	return &c.norm
}

func (c *CoDelLIFO) Decide(t *Task) (int, float64) {
	q := c.tier(t)
	q.roll(t.ArrivalMs, &c.p)
	key := t.DeadlineMs()
	if q.overloaded {
		key = -t.ArrivalMs // adaptive LIFO
		if !c.p.Urgent(t) && q.minDelay > 2*c.p.TargetMs {
			return 0, key // sloughed: background
		}
	}
	return c.p.admitted(t), key
}

func (c *CoDelLIFO) Observe(t *Task, startMs, finishMs float64) {
	q := c.tier(t)
	q.roll(finishMs, &c.p)
	q.observe(startMs - t.ArrivalMs)
}

// codel is one queue's CoDel state (folly's Codel).
type codel struct {
	intervalEnd float64 // ms
	minDelay    float64 // the current interval's minimum so far
	reset       bool    // the next observation starts the interval's minimum
	overloaded  bool
}

// roll ends the interval when now is past it: the verdict is whether its
// minimum delay stood above the target.
func (q *codel) roll(now float64, p *CoDelLIFOParams) {
	if q.intervalEnd == 0 {
		q.intervalEnd, q.reset = now+p.IntervalMs, true
		return
	}
	if now > q.intervalEnd && !q.reset {
		q.overloaded = q.minDelay > p.TargetMs
		q.intervalEnd, q.reset = now+p.IntervalMs, true
	}
}

func (q *codel) observe(delay float64) {
	if q.reset || delay < q.minDelay {
		q.minDelay, q.reset = delay, false
	}
}
