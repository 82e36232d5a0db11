package train

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Period is a stretch of a scenario's time with the same interference: the
// run is cut at every episode's start and end. A scenario without
// interference is one period. Tasks belong to the period they arrive in.
type Period struct {
	FromS, ToS float64
	Threads    int // neighbour threads running throughout
	Writers    int // neighbour writers running throughout
}

// Label names the period for a table: its time span and what ran beside
// the workers.
func (p Period) Label() string {
	var what []string
	if p.Threads > 0 {
		what = append(what, fmt.Sprintf("cpu %d threads", p.Threads))
	}
	if p.Writers > 0 {
		what = append(what, fmt.Sprintf("io %d writers", p.Writers))
	}
	if len(what) == 0 {
		what = append(what, "quiet")
	}
	return fmt.Sprintf("%g–%g s, %s", p.FromS, p.ToS, strings.Join(what, " + "))
}

// Periods cuts the scenario's run at every interference boundary.
func (sc *Scenario) Periods() []Period {
	cuts := []float64{0, sc.DurationS}
	for i := range sc.Interference {
		e := &sc.Interference[i]
		cuts = append(cuts, e.AtS, min(e.AtS+e.ForS, sc.DurationS))
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	out := make([]Period, 0, len(cuts)-1)
	for i := 0; i+1 < len(cuts); i++ {
		th, wr := sc.NeighbourLoad(cuts[i])
		out = append(out, Period{FromS: cuts[i], ToS: cuts[i+1], Threads: th, Writers: wr})
	}
	return out
}

// PeriodOf is the index in periods (Scenario.Periods) of the period
// holding tSec (the last one for a time at or past the end): what every
// per-period table counts a task in, by its arrival.
func PeriodOf(periods []Period, tSec float64) int {
	for i := range periods {
		if tSec < periods[i].ToS {
			return i
		}
	}
	return len(periods) - 1
}

// PeriodCount is how many tasks arrived in one period, how many of them
// met their SLA, and how many started while the executor held more than
// the calm reserve back (Outcome.HeldBack). Counts, not ratios, so that
// seeds pool.
type PeriodCount struct {
	Tasks int `json:"tasks"`
	Met   int `json:"met"`
	Held  int `json:"held,omitempty"`
}

// Attainment is the period's SLA attainment (0 without tasks).
func (c PeriodCount) Attainment() float64 {
	if c.Tasks == 0 {
		return 0
	}
	return float64(c.Met) / float64(c.Tasks)
}

// countPeriods counts out's tasks per period of sc.
func countPeriods(sc *Scenario, out []Outcome) []PeriodCount {
	periods := sc.Periods()
	if len(periods) < 2 {
		return nil
	}
	counts := make([]PeriodCount, len(periods))
	for i := range out {
		k := PeriodOf(periods, out[i].ArrivalMs/1000)
		counts[k].Tasks++
		if out[i].Met {
			counts[k].Met++
		}
		if out[i].HeldBack {
			counts[k].Held++
		}
	}
	return counts
}

// WritePeriodMarkdown writes SLA attainment per period and policy: which
// stretch of the run, quiet or under interference, was lost. Nothing for
// a scenario without interference.
func (ev *Evaluation) WritePeriodMarkdown(w io.Writer) error {
	if len(ev.Periods) < 2 {
		return nil
	}
	var b strings.Builder
	ev.policyHeader(&b, "SLA attainment per period (tasks by arrival), "+ev.Scenario, "| period | tasks |", "| --- | ---: |")
	for k, p := range ev.Periods {
		tasks := 0
		if len(ev.Order) > 0 {
			if c := ev.Policies[ev.Order[0]].PerPeriod; k < len(c) {
				tasks = c[k].Tasks
			}
		}
		fmt.Fprintf(&b, "| %s | %d |", p.Label(), tasks)
		for _, n := range ev.Order {
			c := ev.Policies[n].PerPeriod
			if k >= len(c) || c[k].Tasks == 0 {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(&b, " %.3f |", c[k].Attainment())
		}
		b.WriteString("\n")
	}
	ev.writeHeld(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHeld adds, for the policies that asked for more than the calm
// reserve (the served ones), how many starts of each period's tasks
// happened while they held more than the calm quarter of the workers back
// from background work: where the contended half was paid for. Nothing
// when no policy held it.
func (ev *Evaluation) writeHeld(b *strings.Builder) {
	var held []string
	for _, n := range ev.Order {
		for _, c := range ev.Policies[n].PerPeriod {
			if c.Held > 0 {
				held = append(held, n)
				break
			}
		}
	}
	if len(held) == 0 {
		return
	}
	fmt.Fprintf(b, "\nStarts with more than the calm quarter of the workers held back, per period (tasks by arrival), %s\n\n| period |", ev.Scenario)
	for _, n := range held {
		fmt.Fprintf(b, " %s |", n)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(held)) + "\n")
	for k, p := range ev.Periods {
		fmt.Fprintf(b, "| %s |", p.Label())
		for _, n := range held {
			c := ev.Policies[n].PerPeriod
			if k >= len(c) || c[k].Tasks == 0 {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(b, " %d of %d (%.0f%%) |", c[k].Held, c[k].Tasks, 100*float64(c[k].Held)/float64(c[k].Tasks))
		}
		b.WriteString("\n")
	}
}
