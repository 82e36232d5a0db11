package soak

import (
	"fmt"
	"io"
)

// goals are the figures an operator is promised (README): what the run
// is checked against in its report.
func (r *Result) goals() []struct {
	what string
	ok   bool
} {
	return []struct {
		what string
		ok   bool
	}{
		{"RSS growth at most 5%", r.RSSGrowthPct <= 5},
		{"goroutines back to their start", r.GoroutinesEnd <= r.GoroutinesStart},
		{"descriptors back to their start", r.FDsEnd <= r.FDsStart},
		{"no lost records", r.LostRecords == 0},
		{"no decide errors", r.DecideErrors == 0},
		// The load: the asked rate decided, not only offered.
		{fmt.Sprintf("%d decisions a second (99%% of them)", r.Detail.Rate), r.DecisionsPerS >= 0.99*float64(r.Detail.Rate)},
	}
}

// WriteReport prints the run: counts, latency, the start and end samples,
// what each load saw, and each goal met or missed.
func (r *Result) WriteReport(w io.Writer) {
	d := &r.Detail
	fmt.Fprintf(w, "\n%.0f s: %d decisions (%.0f/s), %d decide errors, %d outcomes acknowledged (%d reports failed), %d experience records (%d of tasks timed out), %d lost\n",
		r.DurationS, r.Decisions, r.DecisionsPerS, r.DecideErrors, r.Outcomes, d.OutcomeErrors, r.ExperienceRecords, d.TimedOutRecords, r.LostRecords)
	fmt.Fprintf(w, "rate: %d tasks/s asked, %.0f/s offered (%d tasks sent, %d not sent: %d calls per client unanswered), %.0f decisions/s achieved\n",
		d.Rate, r.OfferedPerS, d.Sent, d.Unsent, d.MaxInFlight, r.DecisionsPerS)
	fmt.Fprintf(w, "decide round trip after the warm-up: p50 %.0f µs, p99 %.0f µs\n", d.P50Us, r.P99Us)
	fmt.Fprintf(w, "| | after the warm-up (%v) | end |\n| --- | ---: | ---: |\n", d.Warmup)
	fmt.Fprintf(w, "| RSS (MiB) | %.1f | %.1f (%+.1f%%, peak %.1f) |\n", r.RSSMiBStart, r.RSSMiBEnd, r.RSSGrowthPct, d.RSSMiBPeak)
	fmt.Fprintf(w, "| Go heap (MiB) | %.1f | %.1f |\n", d.HeapMiBStart, d.HeapMiBEnd)
	fmt.Fprintf(w, "| goroutines | %d | %d |\n| open descriptors | %d | %d |\n", r.GoroutinesStart, r.GoroutinesEnd, r.FDsStart, r.FDsEnd)
	fmt.Fprintf(w, "goroutines with no load on the agent: %d before the load, %d after it\n", d.GoroutinesIdleBefore, d.GoroutinesIdleAfter)
	fmt.Fprintf(w, "subscribers received %d snapshots; churn %d connections (%d failed); %d malformed frames answered with a stream error (%d reconnects); %d model files written, %d swapped in, %d refused\n",
		d.Snapshots, d.ChurnConnects, d.ChurnFailures, d.MalformedSent, d.MalformedReconnects, d.Reloads, d.Swaps, d.ReloadFails)
	fmt.Fprintf(w, "agent: %d probes attached, %d flame-graph windows, %.0f outcomes for untracked tasks, %.0f experience segments removed by the cap\n",
		d.ProbesAttached, d.FlamegraphWindows, d.UnknownOutcomes, d.SegmentsRemoved)
	for _, g := range r.goals() {
		verdict := "met"
		if !g.ok {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "goal: %s: %s\n", g.what, verdict)
	}
}
