package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Report is what `triage train --report DIR` writes: the learning curve
// (SVG and JSON) and the final evaluation (markdown and JSON).
type Report struct {
	Result      *TrainResult
	Evaluations []*Evaluation
}

// LearningCurveSVG plots per-episode SLA attainment (ε-greedy, training
// seeds) and its running mean over one pass through the scenarios (each
// episode is a different scenario, so the raw line swings with the load).
func (r *Report) LearningCurveSVG() []byte {
	var ep, att, avg []float64
	window := max(1, r.scenarioCount())
	for i, s := range r.Result.Curve {
		ep = append(ep, float64(i))
		att = append(att, s.SLAAttainment)
		lo := max(0, i-window+1)
		sum := 0.0
		for _, c := range r.Result.Curve[lo : i+1] {
			sum += c.SLAAttainment
		}
		avg = append(avg, sum/float64(i+1-lo))
	}
	return LinePlotSVG("triage DQN learning curve", "episode (ensemble members one after another)", "SLA attainment", []Series{
		{Label: "per episode", Colour: "#9ecae1", X: ep, Y: att},
		{Label: fmt.Sprintf("mean of last %d", window), Colour: "#1f77b4", X: ep, Y: avg},
	})
}

// ValidationSVG plots the greedy network's validation margin: mean SLA
// attainment minus the best baseline's, on held-out seeds of the training
// scenarios. The exported checkpoint is the best point of each member.
func (r *Report) ValidationSVG() []byte {
	var x, y []float64
	for i, s := range r.Result.Curve {
		if finite(s.ValScore) {
			x = append(x, float64(i))
			y = append(y, s.ValScore)
		}
	}
	return LinePlotSVG("validation: SLA attainment minus best baseline", "episode", "margin", []Series{{Label: "greedy DQN", Colour: "#d62728", X: x, Y: y}})
}

func (r *Report) scenarioCount() int {
	seen := map[string]bool{}
	for _, s := range r.Result.Curve {
		seen[s.Scenario] = true
	}
	return len(seen)
}

// Markdown is the evaluation tables.
func (r *Report) Markdown() []byte {
	var b bytes.Buffer
	b.WriteString("## Evaluation\n\n")
	for _, ev := range r.Evaluations {
		_ = ev.WriteMarkdown(&b)
		b.WriteString("\n")
	}
	return b.Bytes()
}

// Write puts the report's files into dir, creating it.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating report dir: %w", err)
	}
	curve, err := json.MarshalIndent(r.Result.Curve, "", " ")
	if err != nil {
		return fmt.Errorf("encoding learning curve: %w", err)
	}
	evs := map[string]map[string]Metrics{}
	for _, ev := range r.Evaluations {
		evs[ev.Scenario] = ev.Policies
	}
	evJSON, err := json.MarshalIndent(evs, "", " ")
	if err != nil {
		return fmt.Errorf("encoding evaluation: %w", err)
	}
	files := map[string][]byte{
		"learning-curve.svg":  r.LearningCurveSVG(),
		"validation.svg":      r.ValidationSVG(),
		"learning-curve.json": curve,
		"evaluation.md":       r.Markdown(),
		"evaluation.json":     evJSON,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("writing report %s: %w", name, err)
		}
	}
	return nil
}
