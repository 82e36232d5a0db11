package train

// CoDelLIFO is CoDel with adaptive LIFO, as Meta runs its request queues
// ("Fail at scale", Maurer 2015; folly/executors/Codel.{h,cpp}): the
// controller watches the minimum queueing delay over each interval; when
// even that minimum is above the target, the queue is standing and the
// node is overloaded. While overloaded it serves newest first (adaptive
// LIFO: the newest requests are the ones whose callers still wait) and
// sheds what would queue behind the standing delay. Ported: the minimum
// comes from each task's delay when it starts (Observer.Started), the
// interval and target are folly's; LIFO is the key within a level, and
// shedding puts normal work in the background tier at arrival (urgent
// work is never shed).
type CoDelLIFO struct {
	p CoDelLIFOParams

	intervalEnd float64 // when the current interval ends (ms)
	minDelay    float64 // minimum queueing delay seen in the interval
	seen        bool    // a task started in the interval
	overloaded  bool
}

// CoDelLIFOParams are the controller's parameters.
type CoDelLIFOParams struct {
	tiers
	TargetMs   float64 // folly's codel_target_delay (default 5 ms)
	IntervalMs float64 // folly's codel_interval (default 100 ms)
}

// DefaultCoDelLIFO are the parameters chosen by the search in
// docs/controllers.md (folly's target and interval were the starting point).
var DefaultCoDelLIFO = CoDelLIFOParams{tiers: tiers{UrgentMs: 50}, TargetMs: 5, IntervalMs: 100}

// NewCoDelLIFO returns the controller with parameters p.
func NewCoDelLIFO(p CoDelLIFOParams) *CoDelLIFO { return &CoDelLIFO{p: p} }

func (*CoDelLIFO) Name() string { return "codel-lifo" }

func (c *CoDelLIFO) Reset() { *c = CoDelLIFO{p: c.p} }

func (c *CoDelLIFO) Assign(t *Task, _ *NodeView) (int, float64, error) {
	c.roll(t.ArrivalMs)
	if !c.overloaded {
		return c.p.admitted(t), t.DeadlineMs(), nil
	}
	if !c.p.urgent(t) {
		return 0, -t.ArrivalMs, nil // shed: background, newest first
	}
	return c.p.admitted(t), -t.ArrivalMs, nil
}

// roll ends the interval when now is past it: overloaded is whether the
// interval's minimum delay stood above the target (folly: an interval with
// no request keeps the previous verdict).
func (c *CoDelLIFO) roll(now float64) {
	if c.intervalEnd == 0 {
		c.intervalEnd = now + c.p.IntervalMs
		return
	}
	if now < c.intervalEnd {
		return
	}
	if c.seen {
		c.overloaded = c.minDelay > c.p.TargetMs
	}
	c.seen = false
	c.intervalEnd = now + c.p.IntervalMs
}

func (c *CoDelLIFO) Started(t *Task, now float64) {
	c.roll(now)
	d := now - t.ArrivalMs
	if !c.seen || d < c.minDelay {
		c.minDelay = d
	}
	c.seen = true
}

func (c *CoDelLIFO) Finished(*Task, float64, float64) {}
