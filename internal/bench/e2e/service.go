package e2e

import (
	"fmt"
	"io"
	"math"

	"github.com/triage-agent/triage/internal/bench/measure"
	"github.com/triage-agent/triage/train"
)

// serviceP50 is the median service time (start to finish, ms of scenario
// time) of the finished tasks of each period (tasks by arrival) and class
// of sc, indexed [period][class]; 0 where none finished. It is the number
// that told the real node from its simulated twin where the twin
// overstated what CPU neighbours do to short tasks (docs/calibration.md,
// "Short tasks under CPU contention"): the bench prints it for the agent,
// real beside simulated, so that any node's run says the same.
func serviceP50(sc *train.Scenario, outs []train.Outcome) [][]float64 {
	periods := sc.Periods()
	if len(periods) == 0 || len(sc.Classes) == 0 {
		return nil
	}
	samples := make([][][]float64, len(periods))
	for k := range samples {
		samples[k] = make([][]float64, len(sc.Classes))
	}
	for i := range outs {
		o := &outs[i]
		if !o.Finished || o.Class < 0 || o.Class >= len(sc.Classes) {
			continue
		}
		k := train.PeriodOf(periods, o.ArrivalMs/1000)
		samples[k][o.Class] = append(samples[k][o.Class], o.ServiceMs())
	}
	out := make([][]float64, len(periods))
	for k := range samples {
		out[k] = make([]float64, len(sc.Classes))
		for c, xs := range samples[k] {
			if len(xs) > 0 {
				out[k][c] = round3(measure.Median(xs))
			}
		}
	}
	return out
}

// writeServiceComparison prints the agent's median service time per
// period and class, real beside each simulated node's, with the ratio of
// the first simulated node to the real one; nothing without a simulated
// twin of the same shape.
func writeServiceComparison(w io.Writer, sc *train.Scenario, real [][]float64, sims []Simulated) {
	var twins []Simulated
	for _, s := range sims {
		if sameShape(s.ServiceP50Ms, real) {
			twins = append(twins, s)
		}
	}
	if len(twins) == 0 || len(real) == 0 {
		return
	}
	fmt.Fprint(w, "\nthe agent's service time p50 (ms, start to finish) per period and class, real against simulated:\n\n| period | class | real |")
	for _, s := range twins {
		fmt.Fprintf(w, " simulated, %s node |", s.Node)
	}
	fmt.Fprint(w, " simulated / real |\n| --- | --- | ---: |")
	for range twins {
		fmt.Fprint(w, " ---: |")
	}
	fmt.Fprintln(w, " ---: |")
	periods := sc.Periods()
	for k, p := range periods {
		for c, cl := range sc.Classes {
			r := real[k][c]
			if r == 0 {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %.1f |", p.Label(), cl.Name, r)
			for _, s := range twins {
				fmt.Fprintf(w, " %.1f |", s.ServiceP50Ms[k][c])
			}
			fmt.Fprintf(w, " %.2f |\n", twins[0].ServiceP50Ms[k][c]/r)
		}
	}
	fmt.Fprintf(w, "mean |log(simulated / real)| over them, %s node: %.3f\n", twins[0].Node, serviceError(real, twins[0].ServiceP50Ms))
}

// serviceError is the mean over the cells both have of |log(sim / real)|:
// how far the simulated service times are from the real ones.
func serviceError(real, sim [][]float64) float64 {
	sum, n := 0.0, 0
	for k := range real {
		for c := range real[k] {
			if r, s := real[k][c], sim[k][c]; r > 0 && s > 0 {
				sum += math.Abs(math.Log(s / r))
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func sameShape(a, b [][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
	}
	return true
}
