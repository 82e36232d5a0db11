package control

import (
	"math"
	"slices"
)

// Previewer is a Controller that can say what it would decide for a task
// arriving now without counting that task. Decide moves a controller
// (gradient2 counts the task in flight; CoDel and shed-PI close an interval
// or a period that has ended), so asking it about a task that may never
// come would change what it decides for the tasks that do. The agent's
// decision tables ask about every cell of their grid many times a second;
// they call Preview, and the real tasks still go through Decide.
//
// Preview(t) answers exactly what Decide(t) would answer at that moment
// (control's tests check each controller against a twin that decides).
type Previewer interface {
	Preview(t *Task) (level int, key float64)
}

var (
	_ Previewer = (*CoDelLIFO)(nil)
	_ Previewer = (*ShedPI)(nil)
	_ Previewer = (*Gradient2)(nil)
	_ Previewer = (*Reserve)(nil)
)

// Preview implements Previewer: the rule counts nothing.
func (r *Reserve) Preview(t *Task) (int, float64) { return r.Decide(t) }

// Preview implements Previewer: Decide on a copy of the task's tier, so
// that an interval which has ended is judged without being closed.
func (c *CoDelLIFO) Preview(t *Task) (int, float64) {
	q := *c.tier(t)
	q.roll(t.ArrivalMs, &c.p)
	key := t.DeadlineMs()
	if q.overloaded {
		key = -t.ArrivalMs
		if !c.p.Urgent(t) && q.minDelay > 2*c.p.TargetMs {
			return 0, key
		}
	}
	return c.p.admitted(t), key
}

// Preview implements Previewer: the threshold Decide would use, moved as
// the period's end would move it when that end has passed, computed on a
// copy of the period's delays.
func (c *ShedPI) Preview(t *Task) (int, float64) {
	threshold := c.threshold
	if c.per.end != 0 && t.ArrivalMs >= c.per.end {
		threshold, _ = c.nextThreshold(slices.Clone(c.delays))
	}
	if p := c.priority(t); p == 4 || float64(p) >= threshold {
		return p, t.DeadlineMs()
	}
	return 0, t.DeadlineMs()
}

// nextThreshold is update's arithmetic on delays (which it sorts): the
// threshold and error the period that ends now would leave.
func (c *ShedPI) nextThreshold(delays []float64) (threshold, err float64) {
	d := 0.0
	if len(delays) > 0 {
		slices.Sort(delays)
		d = delays[min(len(delays)-1, int(math.Ceil(c.p.Percentile*float64(len(delays))))-1)]
	}
	e := math.Min((d-c.p.TargetMs)/c.p.TargetMs, 10)
	return clamp(c.threshold+c.p.Kp*(e-c.prevErr)+c.p.Ki*e, 1, 4), e
}

// Preview implements Previewer: Decide's limit test with the task counted,
// without counting it.
func (c *Gradient2) Preview(t *Task) (int, float64) {
	if !c.p.Urgent(t) && float64(c.inFlight+1) > c.limit {
		return 0, t.DeadlineMs()
	}
	return c.p.admitted(t), t.DeadlineMs()
}
