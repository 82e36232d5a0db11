package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/triage-agent/triage/internal/bench/calibrate"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/defaultmodel"
	"github.com/triage-agent/triage/policy/guard"
	"github.com/triage-agent/triage/train"
)

// The simulated column of `bench e2e`: the same scenario, arrival seed and
// policies in the simulator (`triage eval`), on the committed calibration
// and, when the bench measured it, on this node's disk as it was during the
// bench. The bar (simulator and real execution within 5 points) is
// then read off one command's output, on the disk the runs met.

// MeasureNodeDisk measures the disk levels of the committed calibration
// again in dir (calibrate.MeasureDisk), round-tripped through the file
// format so the simulator reads what `--node-out` writes.
func MeasureNodeDisk(ctx context.Context, dir string, progress func(string)) (*train.Calibration, []byte, error) {
	cal, err := calibrate.MeasureDisk(ctx, calibrate.Config{Dir: dir, NoBPF: os.Geteuid() != 0, Progress: progress}, train.DefaultCalibration())
	if err != nil {
		return nil, nil, fmt.Errorf("measuring the disk: %w", err)
	}
	b, err := json.MarshalIndent(cal, "", " ")
	if err != nil {
		return nil, nil, err
	}
	b = append(b, '\n')
	if cal, err = train.ParseCalibration(b); err != nil {
		return nil, nil, fmt.Errorf("the disk measured: %w", err)
	}
	return cal, b, nil
}

// SimNode is a node to simulate: a calibration and what to call it.
type SimNode struct {
	Name string
	Cal  *train.Calibration
}

// Simulate runs rep's policies in the simulator on sc with the bench's
// arrival seed, once per node: the agent's row is the model (file, or the
// embedded one) through the agent's default guard, as `triage eval`'s dqn,
// and the blind agent's (when rep has one) eval's dqn-ablated, both with
// the order the agent run's executor kept (rep.Stats.AnswerOrder).
func Simulate(sc *train.Scenario, seed int64, model string, rep *Report, nodes []SimNode) ([]Simulated, error) {
	order, err := train.ParseAnswerOrder(rep.Stats.AnswerOrder)
	if err != nil {
		return nil, err
	}
	cfg := policy.Config{Device: "cpu"}
	var sess *policy.Session
	if model != "" {
		sess, err = policy.LoadFile(model, cfg)
	} else {
		sess, err = policy.LoadBytes(defaultmodel.Bytes(), cfg)
	}
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	var out []Simulated
	for _, nd := range nodes {
		ablated := rep.AgentAblated != nil
		rows, _, err := train.ModelRows(sess, guard.DefaultController, guard.DefaultConfig(), ablated, order)
		if err != nil {
			return nil, err
		}
		pols := []train.Policy{rows[0]}
		if ablated {
			pols = append(pols, rows[len(rows)-1]) // dqn-ablated
		}
		for _, b := range train.Baselines(sc) {
			if _, ok := rep.Evaluation.Policies[b.Name()]; ok {
				pols = append(pols, b)
			}
		}
		ev, err := train.EvaluateSeedsOn(sc, []int64{seed}, train.EvalNode{Calibration: nd.Cal}, pols...)
		if err != nil {
			return nil, fmt.Errorf("simulating on the %s node: %w", nd.Name, err)
		}
		s := Simulated{Node: nd.Name, SLAAttainment: map[string]float64{}}
		for label := range rep.Evaluation.Policies {
			sim := label
			switch label {
			case "agent":
				sim = "dqn"
			case "agent-ablated":
				sim = "dqn-ablated"
			}
			if m, ok := ev.Policies[sim]; ok {
				s.SLAAttainment[label] = m.SLAAttainment
			}
		}
		s.HeldBackStartsPerPeriod = heldPerPeriod(ev.Policies["dqn"].PerPeriod)
		// The agent's twin once more, for its tasks' service times (the
		// evaluation keeps metrics only): the same policy, arrivals and node.
		twin, err := train.Run(sc, rows[0], train.SimConfig{Seed: seed, Calibration: nd.Cal})
		if err != nil {
			return nil, fmt.Errorf("simulating the agent on the %s node: %w", nd.Name, err)
		}
		s.ServiceP50Ms = serviceP50(sc, twin)
		s.ShortStarts = train.ShortStarts(twin)
		s.ExpiredStarts = train.ExpiredStarts(twin)
		out = append(out, s)
	}
	return out, nil
}

// WriteSimulatedMarkdown prints, per policy, the real SLA attainment beside
// each simulated one (r.Simulated) and the difference in points.
func (r *Report) WriteSimulatedMarkdown(w io.Writer) {
	sims := r.Simulated
	fmt.Fprint(w, "| policy | real |")
	for _, s := range sims {
		fmt.Fprintf(w, " simulated, %s node | real − simulated |", s.Node)
	}
	fmt.Fprint(w, "\n| --- | ---: |")
	for range sims {
		fmt.Fprint(w, " ---: | ---: |")
	}
	fmt.Fprintln(w)
	for _, label := range r.Evaluation.Order {
		real := r.Evaluation.Policies[label].SLAAttainment
		fmt.Fprintf(w, "| %s | %.4f |", label, real)
		for _, s := range sims {
			if v, ok := s.SLAAttainment[label]; ok {
				fmt.Fprintf(w, " %.4f | %+.1f |", v, 100*(real-v))
			} else {
				fmt.Fprint(w, " – | – |")
			}
		}
		fmt.Fprintln(w)
	}
}

// WriteDiskLevels prints the disk measured beside the committed one.
func WriteDiskLevels(w io.Writer, cal *train.Calibration) {
	def := train.DefaultCalibration()
	fmt.Fprintf(w, "the disk, measured %s (committed %s):\n", cal.Machine.DiskMeasuredAt, def.Machine.MeasuredAt)
	fmt.Fprintln(w, "writers  write+fsync ms  slowdown  (committed: ms, slowdown)")
	for _, l := range cal.IO {
		c := def.IOAt(float64(l.Writers))
		fmt.Fprintf(w, "%7d  %14.3f  %8.2f  (%.3f, %.2f)\n", l.Writers, l.WriteMs, l.Slowdown, c.WriteMs, c.Slowdown)
	}
	fmt.Fprintln(w)
}

// WriteClassLevels prints, per class, a run's SLA attainment (its
// Metrics.PerClass) and how many of the class's tasks got each priority:
// where real execution parts from the simulator, this says whether the
// decisions or the execution moved.
func WriteClassLevels(w io.Writer, sc *train.Scenario, res *Result) {
	type row struct {
		n      int
		levels [policy.NumActions]int
	}
	rows := make([]row, len(sc.Classes))
	for i := range res.Outcomes {
		o := &res.Outcomes[i]
		rows[o.Class].n++
		rows[o.Class].levels[o.Level]++
	}
	fmt.Fprintln(w, "| class | tasks | SLA attainment | priority 0 / 1 / 2 / 3 / 4 |")
	fmt.Fprintln(w, "| --- | ---: | ---: | --- |")
	for c, r := range rows {
		name := sc.Classes[c].Name
		fmt.Fprintf(w, "| %s | %d | %.4f | %d / %d / %d / %d / %d |\n", name, r.n, res.Metrics.PerClass[name], r.levels[0], r.levels[1], r.levels[2], r.levels[3], r.levels[4])
	}
}
