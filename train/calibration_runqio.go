package train

import (
	"math"
	"slices"
)

// RunqIOLevel is the run queue read beside steady CPU spinners
// (SpinnersPerCPU per CPU, at the workers' nice) and Writers fsync'ing
// writers: the agent's run-queue p50 and p99 (µs, the median of the
// windows). The rows of one spinners level, writers 0 first, say how much
// writers move the run-queue percentiles from where the spinners alone put
// them.
//
// Why it is a grid and not a load: the run-queue histogram counts every
// wake-up on the node, and an fsync'd writer wakes twice per write,
// thousands of times a second, each time onto a CPU at once. Beside
// spinners the writers' short waits become most of the samples and dilute
// the p99 (4 ms to 32 µs with one writer beside 0.8 spinners per CPU on
// this machine); more writers queue among themselves and raise it again;
// at two spinners per CPU every wake-up waits and it stays in milliseconds
// (docs/calibration.md, "The run queue under writers").
type RunqIOLevel struct {
	SpinnersPerCPU float64 `json:"spinners_per_cpu"`
	Writers        int     `json:"writers"`
	RunqP50Us      float64 `json:"runq_p50_us"`
	RunqP99Us      float64 `json:"runq_p99_us"`
}

// RunqBesideWriters is the run-queue percentile that perCPU queueing
// threads per CPU read beside writers fsync'ing writers, where without
// writers they read alone (µs; p99 true for the p99 rows, else the p50
// rows): alone itself without writers or without rows (a calibration
// measured before them).
//
// From one writer on, the rows' own value: the writers' wake-ups are most
// of the samples, so what the queueing threads alone would read (the
// simulator's model of them, the oversubscribed moments included) no
// longer shows; log-linear between the writers measured, the last one's
// past it. Under one writer (a window with a writer for part of it) the
// logs go linearly from alone to the first writers row's. Between
// spinners levels the logs are linear in the spinners; past the first or
// last level, that level's.
func (c *Calibration) RunqBesideWriters(perCPU, writers, alone float64, p99 bool) float64 {
	first, ok := c.firstRunqIOLevel()
	if !ok || len(first) < 2 || !(writers > 0) || !finite(perCPU) || !(alone > 0) {
		return alone // no rows, or rows Validate refuses
	}
	at := func(g []RunqIOLevel, w float64) float64 { return runqLogAt(g, w, p99) }
	firstWriters := float64(first[1].Writers)
	w := max(writers, firstWriters) // the rows' value, blended with alone below
	below, above := c.runqIOLevelsAround(perCPU)
	var l float64
	switch {
	case below == nil:
		l = at(above, w)
	case above == nil:
		l = at(below, w)
	default:
		sa, sb := below[0].SpinnersPerCPU, above[0].SpinnersPerCPU
		l = lerp(at(below, w), at(above, w), (perCPU-sa)/(sb-sa))
	}
	if writers < firstWriters {
		l = lerp(math.Log(alone), l, writers/firstWriters)
	}
	return math.Exp(l)
}

// runqLogAt is the log of the p99 (else p50) of spinners level g at
// writers w, from its first row with writers on: log-linear between rows,
// the last row's past it.
func runqLogAt(g []RunqIOLevel, w float64, p99 bool) float64 {
	v := func(l RunqIOLevel) float64 {
		if p99 {
			return math.Log(l.RunqP99Us)
		}
		return math.Log(l.RunqP50Us)
	}
	for j := 2; j < len(g); j++ {
		if w <= float64(g[j].Writers) {
			a, b := g[j-1], g[j]
			return lerp(v(a), v(b), (w-float64(a.Writers))/float64(b.Writers-a.Writers))
		}
	}
	return v(g[len(g)-1])
}

// runqIOLevels calls yield with each spinners level of the RunqIO rows
// (its rows, a subslice), in order (Validate has checked the order),
// until yield returns false. It allocates nothing: the simulator reads the
// rows at every tick.
func (c *Calibration) runqIOLevels(yield func(level []RunqIOLevel) bool) {
	start := 0
	for i := 1; i <= len(c.RunqIO); i++ {
		if i == len(c.RunqIO) || c.RunqIO[i].SpinnersPerCPU != c.RunqIO[start].SpinnersPerCPU {
			if !yield(c.RunqIO[start:i]) {
				return
			}
			start = i
		}
	}
}

// firstRunqIOLevel is the RunqIO rows' first spinners level; ok false
// without rows.
func (c *Calibration) firstRunqIOLevel() (first []RunqIOLevel, ok bool) {
	c.runqIOLevels(func(level []RunqIOLevel) bool { first = level; return false })
	return first, first != nil
}

// runqIOLevelsAround is the last spinners level under perCPU and the
// first at or over it; nil for the side that has none.
func (c *Calibration) runqIOLevelsAround(perCPU float64) (below, above []RunqIOLevel) {
	c.runqIOLevels(func(level []RunqIOLevel) bool {
		if level[0].SpinnersPerCPU < perCPU {
			below = level
			return true
		}
		above = level
		return false
	})
	return below, above
}

// validateRunqIO checks the RunqIO rows: none, or levels of spinners per
// CPU in increasing order, each of the same writers, at least two,
// increasing from 0, every percentile a positive number.
func (c *Calibration) validateRunqIO() error {
	for i, l := range c.RunqIO {
		if !finite(l.RunqP50Us) || l.RunqP50Us <= 0 || !finite(l.RunqP99Us) || l.RunqP99Us <= 0 {
			return badCal("runq_io[%d]: runq_p50_us and runq_p99_us must be positive numbers, got %v, %v", i, l.RunqP50Us, l.RunqP99Us)
		}
		if !finite(l.SpinnersPerCPU) || l.SpinnersPerCPU < 0 {
			return badCal("runq_io[%d]: spinners_per_cpu must be a non-negative number, got %v", i, l.SpinnersPerCPU)
		}
	}
	for i, l := range c.RunqIO {
		first := i == 0 || l.SpinnersPerCPU != c.RunqIO[i-1].SpinnersPerCPU
		switch {
		case first && i > 0 && l.SpinnersPerCPU < c.RunqIO[i-1].SpinnersPerCPU:
			return badCal("runq_io[%d]: spinners_per_cpu must not decrease", i)
		case first && l.Writers != 0:
			return badCal("runq_io[%d]: each spinners level must start with writers 0, got %d", i, l.Writers)
		case !first && l.Writers <= c.RunqIO[i-1].Writers:
			return badCal("runq_io[%d]: writers must increase within a spinners level", i)
		}
		last := i == len(c.RunqIO)-1 || c.RunqIO[i+1].SpinnersPerCPU != l.SpinnersPerCPU
		if first && last {
			return badCal("runq_io[%d]: a spinners level needs a row with writers beside its row without", i)
		}
	}
	first, _ := c.firstRunqIOLevel()
	var err error
	c.runqIOLevels(func(g []RunqIOLevel) bool {
		if !slices.EqualFunc(g, first, func(a, b RunqIOLevel) bool { return a.Writers == b.Writers }) {
			err = badCal("runq_io: spinners level %v reads writers unlike level %v: every level takes the same writers", g[0].SpinnersPerCPU, first[0].SpinnersPerCPU)
			return false
		}
		return true
	})
	return err
}
