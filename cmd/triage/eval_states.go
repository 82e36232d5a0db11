package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/guard"
	"github.com/triage-agent/triage/train"
)

// outsideTolerance is how far (in a feature's [0, 1] unit) a logged
// median may sit past the simulated 10–90% band before the feature is
// marked: less is within the simulator's own noise.
const outsideTolerance = 0.05

// writeStateComparison runs sc once more as the dqn row (seed:
// the arrivals), recording the states it decides on, and writes each
// feature's spread there beside its spread in the agent's experience log
// dir (docs/calibration.md, "Simulator against real execution"): where a
// real node's states leave the simulated band, the model decides out of
// what it trained on. Then the model's network decides every logged state
// again, beside the level the logged agent served (replayer).
func writeStateComparison(w io.Writer, dir string, sc *train.Scenario, seed int64, sess policy.Decider, guardName string, gcfg guard.Config, order train.AnswerOrder) error {
	g, err := evalGuard(guardName, gcfg)
	if err != nil {
		return err
	}
	replay := newReplayer(sess, g)
	var logged []policy.State
	if err := experience.ReadDir(dir, func(r experience.Record) error {
		logged = append(logged, r.State)
		return replay.add(r)
	}); err != nil {
		return fmt.Errorf("--states-from: %w", err)
	}
	if len(logged) == 0 {
		return fmt.Errorf("--states-from %s: no experience records", dir)
	}
	rec := &train.RecordingDecider{Decider: sess}
	rows, _, err := modelRows(rec, guardName, gcfg, false, order)
	if err != nil {
		return err
	}
	if _, err := train.Run(sc, rows[0], train.SimConfig{Seed: seed}); err != nil {
		return err
	}
	sim, real := train.Spreads(rec.States), train.Spreads(logged)
	fmt.Fprintf(w, "\n### states of %s: simulated (dqn, %d decisions) against logged (%s, %d records)\n\n", sc.Name, len(rec.States), dir, len(logged))
	fmt.Fprintln(w, "| feature | simulated p10 / p50 / p90 | logged p10 / p50 / p90 | logged median |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	var outside []string
	for f := range policy.NumFeatures {
		mark := "within"
		if sim[f].Outside(real[f], outsideTolerance) {
			mark = "**outside**"
			outside = append(outside, policy.FeatureNames[f])
		}
		fmt.Fprintf(w, "| %d %s | %.3f / %.3f / %.3f | %.3f / %.3f / %.3f | %s |\n", f, policy.FeatureNames[f],
			sim[f].P10, sim[f].P50, sim[f].P90, real[f].P10, real[f].P50, real[f].P90, mark)
	}
	if len(outside) == 0 {
		fmt.Fprintf(w, "\nevery logged median lies within the simulated 10–90%% band (±%.2f)\n", outsideTolerance)
	} else {
		fmt.Fprintf(w, "\n%d features with the logged median outside the simulated 10–90%% band (±%.2f): %s\n", len(outside), outsideTolerance, strings.Join(outside, ", "))
	}
	return replay.write(w)
}
