package control

import "math"

// Gradient2 is an adaptive concurrency limit, Netflix concurrency-limits'
// Gradient2Limit (github.com/Netflix/concurrency-limits; the idea behind
// Envoy's adaptive concurrency filter too): it compares a long-term average
// of latency with the recent one, and moves the limit on tasks in flight by
// their ratio (the gradient): the limit grows while latency stays at its
// long-term level and shrinks when queueing raises it. A normal task that
// arrives with the limit reached overflows to the background tier.
//
// Ported: "in flight" is tasks decided and not finished; a latency sample
// is a finished task's latency over its expected cost (the stretch), since
// the tasks of one executor differ in size by a hundred times and the raw
// latency would follow the class mix, not the queue; samples are averaged
// over windows of WindowSamples, as Netflix's WindowedLimit does. Urgent
// work is never shed.
type Gradient2 struct {
	p Gradient2Params

	limit    float64
	inFlight int
	long     ewma    // long-term latency
	win      float64 // sum of this window's samples
	winN     int
}

// Gradient2Params are the controller's parameters (Netflix's defaults
// where they carry over: tolerance 1.5, smoothing 0.2, long window 600).
type Gradient2Params struct {
	Tiers
	InitialLimit  float64
	MinLimit      float64
	MaxLimit      float64
	Tolerance     float64 // the latency ratio tolerated before shrinking
	Smoothing     float64
	LongWindow    int // samples in the long-term average
	WindowSamples int // samples averaged into one short-term reading
	QueueSize     float64
}

// DefaultGradient2 are the parameters chosen by the search in docs/controllers.md.
var DefaultGradient2 = Gradient2Params{Tiers: Tiers{UrgentMs: 500}, InitialLimit: 2, MinLimit: 1, MaxLimit: 1000,
	Tolerance: 1.05, Smoothing: 0.2, LongWindow: 600, WindowSamples: 10, QueueSize: 1}

// NewGradient2 returns the controller with parameters p.
func NewGradient2(p Gradient2Params) *Gradient2 {
	return &Gradient2{p: p, limit: p.InitialLimit, long: ewma{alpha: 2 / (float64(p.LongWindow) + 1)}}
}

func (*Gradient2) Name() string { return "gradient2" }

func (c *Gradient2) Reset() { *c = *NewGradient2(c.p) }

func (c *Gradient2) Decide(t *Task) (int, float64) {
	c.inFlight++
	if !c.p.Urgent(t) && float64(c.inFlight) > c.limit {
		return 0, t.DeadlineMs()
	}
	return c.p.admitted(t), t.DeadlineMs()
}

func (c *Gradient2) Observe(t *Task, _, finishMs float64) {
	inFlight := c.inFlight
	c.inFlight = max(0, c.inFlight-1)
	c.win += (finishMs - t.ArrivalMs) / math.Max(t.ExpectedMs, 1e-3)
	c.winN++
	if c.winN < c.p.WindowSamples {
		return
	}
	short := c.win / float64(c.winN)
	c.win, c.winN = 0, 0
	c.update(short, inFlight)
}

// update is Gradient2Limit.update.
func (c *Gradient2) update(short float64, inFlight int) {
	c.long.add(short)
	// When latency falls well below its long-term level, bring the
	// long-term level down faster (Netflix's "long RTT recovery").
	if c.long.v/short > 2 {
		c.long.v *= 0.95
	}
	// Application-limited: too few in flight to say anything of the limit.
	if float64(inFlight) < c.limit/2 {
		return
	}
	gradient := clamp(c.p.Tolerance*c.long.v/short, 0.5, 1)
	next := c.limit*gradient + c.p.QueueSize
	next = c.limit*(1-c.p.Smoothing) + next*c.p.Smoothing
	c.limit = clamp(next, c.p.MinLimit, c.p.MaxLimit)
}
