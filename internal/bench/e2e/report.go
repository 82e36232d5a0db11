package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/triage-agent/triage/train"
)

// ErrNothingMeasured refuses a --node-out where no disk was measured.
var ErrNothingMeasured = errors.New("--node-out: nothing measured (the scenario writes nothing, or --measure-disk=false)")

// SimNodes are the nodes `bench e2e` simulates its policies on: the
// committed calibration and, when measure is set and sc writes to the
// disk, this node's disk measured first in ioDir (MeasureNodeDisk; its
// levels printed to w, its file written to nodeOut when given). unitMs is
// the measured uncontended write, for BenchConfig.IOWriteMs (0: none).
func SimNodes(ctx context.Context, w io.Writer, sc *train.Scenario, ioDir string, measure bool, nodeOut string) (nodes []SimNode, unitMs float64, err error) {
	nodes = []SimNode{{Name: "committed", Cal: train.DefaultCalibration()}}
	if !measure || !sc.DoesIO() {
		if nodeOut != "" {
			return nil, 0, ErrNothingMeasured
		}
		return nodes, 0, nil
	}
	cal, b, err := MeasureNodeDisk(ctx, ioDir, func(s string) { fmt.Fprintln(os.Stderr, "measuring the disk:", s) })
	if err != nil {
		return nil, 0, err
	}
	if nodeOut != "" {
		if err := os.WriteFile(nodeOut, b, 0o644); err != nil {
			return nil, 0, fmt.Errorf("--node-out: %w", err)
		}
	}
	WriteDiskLevels(w, cal)
	return append(nodes, SimNode{Name: "this", Cal: cal}), cal.IO[0].WriteMs, nil
}

// WriteReport prints what `bench e2e` prints after its runs: the metrics
// of `triage eval` (overall, per class, per period), the levels the agent
// gave each class, the simulated column (or why there is none, when
// simulateAsked), and the agent's decisions and cost.
func (r *Report) WriteReport(w io.Writer, sc *train.Scenario, simulateAsked bool) error {
	ev := r.Evaluation
	fmt.Fprintln(w)
	if err := ev.WriteMarkdown(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := ev.WriteClassMarkdown(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if len(ev.Periods) > 1 {
		if err := ev.WritePeriodMarkdown(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	WriteClassLevels(w, sc, r.Agent)
	if r.AgentAblated != nil {
		fmt.Fprint(w, "\nthe agent blind to the kernel (agent-ablated):\n\n")
		WriteClassLevels(w, sc, r.AgentAblated)
	}
	if len(r.Simulated) > 0 {
		fmt.Fprint(w, "\nthe same policies and arrivals in the simulator (triage eval, one seed):\n\n")
		r.WriteSimulatedMarkdown(w)
		writeServiceComparison(w, sc, r.Stats.ServiceP50Ms, r.Simulated)
	} else if simulateAsked {
		fmt.Fprintf(w, "\n(no simulated column: the run's clock is ×%.3f, and the simulator's is the scenario's own; run with --scale 1 to compare)\n", r.FIFO.TimeScale)
	}
	st, fifo, res := r.Stats, r.FIFO, r.Agent
	fmt.Fprintf(w, "\nagent goodput %.2fx FIFO's; SLA attainment %.4f vs %.4f\n", r.GoodputRatio(), res.Metrics.SLAAttainment, fifo.Metrics.SLAAttainment)
	fmt.Fprintf(w, "decisions (--decide %s): %d local, from the agent's table; %d remote, by a call (%d errors); a task's wait for its priority p50 %.1f µs, p99 %.1f µs\n",
		st.Decide, st.LocalDecisions, st.RemoteDecisions, st.DecideErrors, st.DecideP50Us, st.DecideP99Us)
	fmt.Fprintf(w, "background reserve: %d of %d task starts while the agent held more than the calm quarter of the workers back (up to half: the tasks slowed by at least 1.25 times, or, before enough finished, its run-queue p99 at 1 ms or more); %d background tasks started on a held worker as short work (within the tightest foreground SLA over the slowdown) or urgent work (an SLA within four times it)%s\n", st.HeldBackStarts, len(res.Outcomes), st.ShortStarts, simulatedCount(r.Simulated, func(s *Simulated) int { return s.ShortStarts }))
	fmt.Fprintf(w, "expired starts: %d tasks started after their deadline had passed (work that could meet no SLA)%s\n", st.ExpiredStarts, simulatedCount(r.Simulated, func(s *Simulated) int { return s.ExpiredStarts }))
	fmt.Fprint(w, heldByPeriod(ev, st.HeldBackStartsPerPeriod, r.Simulated))
	fmt.Fprintf(w, "decision round trip over QUIC (request out, answer in): p50 %.0f µs, p99 %.0f µs over %d calls; in the agent (request in, answer out): p50 %.0f µs, p99 %.0f µs, mean %.0f µs, mean batch %.1f tasks\n",
		st.RemoteDecideP50Us, st.RemoteDecideP99Us, st.RemoteDecisions, st.AgentSideP50Us, st.AgentSideP99Us, st.AgentSideMeanUs, st.MeanBatch)
	fmt.Fprintf(w, "agent process: CPU %.1f%% of one core (%.1f%% while it served no one, in the FIFO run), RSS %.1f MiB at the end (over the run: mean %.1f, largest %.1f; peak since start %.1f MiB), %d probes attached, %d flame-graph windows, %d experience records\n",
		st.CPUPercent, st.IdleCPUPercent, st.RSSMiB, st.RSSMiBMean, st.RSSMiBMax, st.PeakRSSMiB, st.ProbesAttached, st.FlamegraphWindows, st.ExperienceRecords)
	return nil
}

// heldByPeriod is the held-back starts per period as lines of the
// report ("" for one period): which stretch of the run, quiet or beside the
// neighbours, the agent counted the node as contended in, and the
// simulator's agent on each simulated node beside it. Each period's count
// is out of the tasks that arrived in it.
func heldByPeriod(ev *train.Evaluation, held []int, sims []Simulated) string {
	if len(held) != len(ev.Periods) || len(held) < 2 {
		return ""
	}
	var tasks []train.PeriodCount
	if m, ok := ev.Policies["agent"]; ok {
		tasks = m.PerPeriod
	}
	var b strings.Builder
	line := func(what string, held []int) {
		fmt.Fprintf(&b, "background reserve by period (tasks by arrival), %s:", what)
		for k, p := range ev.Periods {
			if k > 0 {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " %s: %d", p.Label(), held[k])
			if k < len(tasks) {
				fmt.Fprintf(&b, " of %d", tasks[k].Tasks)
			}
		}
		b.WriteString("\n")
	}
	line("real", held)
	for _, s := range sims {
		if len(s.HeldBackStartsPerPeriod) == len(held) {
			line("simulated, "+s.Node+" node", s.HeldBackStartsPerPeriod)
		}
	}
	return b.String()
}

// simulatedCount is a count of the twins (count of each) beside the real
// run's, as " (simulated: committed node N, this node M)", or nothing
// without a twin.
func simulatedCount(sims []Simulated, count func(*Simulated) int) string {
	if len(sims) == 0 {
		return ""
	}
	parts := make([]string, len(sims))
	for i := range sims {
		parts[i] = fmt.Sprintf("%s node %d", sims[i].Node, count(&sims[i]))
	}
	return " (simulated: " + strings.Join(parts, ", ") + ")"
}
