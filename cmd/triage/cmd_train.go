package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/train"
)

func init() {
	register("train", "train a DQN on scenarios (or fine-tune on experience), write model.onnx and a report", runTrain)
}

// stringList is a repeatable flag that also splits on commas, so
// --scenario a.json,b.json and --scenario a.json --scenario b.json agree.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

func runTrain(args []string) error {
	fs := newFlagSet("train", "train a DQN policy in the simulator, or fine-tune one on the agent's experience log")
	var scenarios stringList
	fs.Var(&scenarios, "scenario", "scenario file(s), repeatable or comma-separated")
	out := fs.String("out", "model.onnx", "where to write the trained model")
	episodes := fs.Int("episodes", 0, "training episodes per ensemble member (0: the trainer's default)")
	ensemble := fs.Int("ensemble", 1, "train this many networks (seeds seed, seed+1, ...) and export their averaged Q-values as one model")
	seed := fs.Int64("seed", 1, "training seed: the same seed gives a bit-identical model")
	report := fs.String("report", "", "directory for the report (learning curve SVG/JSON, evaluation markdown/JSON)")
	version := fs.String("version", "", "model version in its metadata (default dqn-<seed>-<date>)")
	expDir := fs.String("experience", "", "fine-tune on the agent's experience log in this directory (needs --init)")
	initModel := fs.String("init", "", "model to start fine-tuning from")
	epochs := fs.Int("epochs", 4, "passes over the experience when fine-tuning")
	demoEpisodes := fs.Int("demo-episodes", 0, "episodes per member whose behaviour follows the demonstrator (the training scenario's static-class baseline), DQfD")
	demoMargin := fs.Float64("demo-margin", 0, "DQfD large-margin loss towards the demonstrator's action (0: off)")
	demoWeight := fs.Float64("demo-weight", 0, "weight of the DQfD margin loss (0: 1)")
	teacher := fs.String("teacher", "", "the demonstrator: a baseline's name, or best (each training scenario's best baseline); default static-class")
	valSeeds := fs.Int("validation-seeds", 0, "arrival seeds per training scenario for checkpoint validation (0: 1)")
	valScenarios := fs.Int("validation-scenarios", 0, "training scenarios, spread evenly over the list, that checkpoint validation runs on (0: 12)")
	valKernel := fs.Float64("validation-kernel-weight", 0, "add this weight times a checkpoint's kernel share (its SLA attainment minus the same network's with the kernel features neutral, on the validation scenarios with interference) to its validation score; 0: off (docs/training.md)")
	metBonus := fs.Float64("met-bonus", 0, "add this much, times the class weight, to the training reward of each task that met its SLA (0: none, as the shipped model)")
	harmWeight := fs.Float64("harm-weight", 0, "weight of the overtaking price in the training reward (0: 1)")
	blameWeight := fs.Float64("blame-weight", 0, "weight of the blocking price in the training reward (0: the trainer's default, 6; negative: none)")
	varyNode := fs.Float64("vary-node", 0, "per-episode probability that the node reads its kernel features unlike the calibrated one (0: the trainer's default, 1; negative: never; docs/training.md, \"Varying the node\")")
	missing := fs.Float64("missing-sources", 0, "per-episode probability that each kernel-signal source is absent, its features neutral (0: the trainer's default, 0.5; negative: none)")
	hidden := fs.String("hidden", "", "hidden layer widths, comma-separated (default 64,64)")
	generated := fs.Int("generated", 0, "also train on this many generated scenarios (train.Generate: arrival shapes, class mixes, SLAs, costs, tenants, CPUs, interference drawn from wide distributions)")
	genSeed := fs.Int64("gen-seed", 1, "seed of the generated scenarios")
	genWorkers := fs.String("gen-workers", "", "the worker counts the generated scenarios' nodes are drawn from, comma-separated (default: 2 to 16; `make model` uses the default)")
	if done, err := parseCommandFlags(fs, args); done {
		return err
	}
	if *expDir != "" {
		return runFineTune(*expDir, *initModel, *out, *seed, *epochs, *version)
	}
	gen, err := parseGenWorkers(*genWorkers)
	if err != nil {
		return err
	}
	if *valSeeds < 0 || *valScenarios < 0 {
		return fmt.Errorf("--validation-seeds %d, --validation-scenarios %d: want 0 (the default) or more", *valSeeds, *valScenarios)
	}
	if *valKernel < 0 || math.IsNaN(*valKernel) || math.IsInf(*valKernel, 0) {
		return fmt.Errorf("--validation-kernel-weight %v: want 0 (off) or a positive weight", *valKernel)
	}
	if len(scenarios) == 0 && *generated == 0 {
		return errors.New("no --scenario or --generated given")
	}
	scs, err := loadScenarios(scenarios)
	if err != nil {
		return err
	}
	var names []string
	for _, sc := range scs {
		names = append(names, sc.Name)
	}
	if *generated > 0 {
		scs = append(scs, train.Generate(*genSeed, *generated, gen)...)
		names = append(names, fmt.Sprintf("%d generated (seed %d%s)", *generated, *genSeed, genWorkersNote(gen)))
	}
	prog := newProgress(os.Stdout)
	cfg := train.DQNConfig{Seed: *seed, Episodes: *episodes, Ensemble: *ensemble,
		DemoEpisodes: *demoEpisodes, DemoMargin: *demoMargin, DemoWeight: *demoWeight, Teacher: *teacher, ValidationSeeds: *valSeeds, ValidationScenarios: *valScenarios, ValidationKernelWeight: *valKernel,
		HarmWeight: *harmWeight, BlameWeight: *blameWeight, MetBonus: *metBonus, MissingSources: *missing, VaryNode: *varyNode}
	for _, h := range strings.Split(*hidden, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		n, err := strconv.Atoi(h)
		if err != nil || n < 1 || n > 1024 {
			return fmt.Errorf("--hidden %q: want widths 1..1024, comma-separated", *hidden)
		}
		cfg.Hidden = append(cfg.Hidden, n)
	}
	cfg.Progress = func(st train.EpisodeStats) { prog.episode(st, cfg.Episodes, max(1, cfg.Ensemble)) }
	if cfg.Episodes == 0 {
		cfg.Episodes = 24 // the trainer's default, named here for the progress bar
	}
	start := time.Now()
	res, err := train.TrainDQN(scs, cfg)
	if err != nil {
		return err
	}
	prog.done()
	score := "SLA attainment over the best baseline"
	if *valKernel > 0 {
		score += fmt.Sprintf(", plus %g × the kernel share", *valKernel)
	}
	fmt.Printf("trained %d episodes in %s; kept episodes %v (validation score %+.4f: %s; exported model %+.4f)\n",
		len(res.Curve), time.Since(start).Round(time.Second), res.BestEpisode, res.BestScore, score, res.Score)

	if *version == "" {
		*version = fmt.Sprintf("dqn-s%d-%s", *seed, time.Now().UTC().Format("20060102"))
	}
	meta := policy.CurrentMetadata(*version, "DQN (double DQN, prioritized replay, target network) trained by triage train in the simulator on: "+strings.Join(names, ", "))
	cfgJSON, _ := json.Marshal(res.Config)
	meta.Extra = map[string]string{
		"trainer":      "triage train",
		"seed":         strconv.FormatInt(*seed, 10),
		"scenarios":    strings.Join(names, ","),
		"episodes":     strconv.Itoa(len(res.Curve)),
		"best_episode": fmt.Sprint(res.BestEpisode),
		"ensemble":     strconv.Itoa(len(res.BestEpisode)),
		"config":       string(cfgJSON),
	}
	if !res.Ranges.Empty() {
		meta.Ranges = res.Ranges
	}
	if err := writeModel(*out, res.Net, meta); err != nil {
		return err
	}
	fmt.Printf("wrote %s (version %s)\n", *out, *version)

	rep := &train.Report{Result: res}
	dqn := &train.MLPPolicy{Label: "dqn", Net: res.Net}
	for _, sc := range scs {
		ev, err := train.Evaluate(sc, 0, append([]train.Policy{dqn}, train.Baselines(sc)...)...)
		if err != nil {
			return err
		}
		rep.Evaluations = append(rep.Evaluations, ev)
	}
	os.Stdout.Write(rep.Markdown())
	if *report != "" {
		if err := rep.Write(*report); err != nil {
			return err
		}
		fmt.Printf("report in %s\n", *report)
	}
	return nil
}

// writeModel writes atomically: a reader (the agent's hot reload) never
// sees a half-written file.
func writeModel(path string, m *policy.MLP, meta policy.Metadata) error {
	b, err := policy.MarshalONNX(m, meta)
	if err != nil {
		return fmt.Errorf("encoding model: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".model-*.onnx")
	if err != nil {
		return fmt.Errorf("writing model: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("writing model: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing model: %w", err)
	}
	// A model is not a secret, and an agent running as another user must
	// read it: not CreateTemp's 0600.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing model: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing model: %w", err)
	}
	return nil
}

func runFineTune(dir, initPath, out string, seed int64, epochs int, version string) error {
	if initPath == "" {
		return errors.New("--experience needs --init MODEL to start from")
	}
	b, err := os.ReadFile(initPath)
	if err != nil {
		return fmt.Errorf("reading --init: %w", err)
	}
	m, meta, err := policy.ReadONNX(b)
	if err != nil {
		return fmt.Errorf("reading --init %s: %w", initPath, err)
	}
	if err := policy.CheckSchema(meta); err != nil {
		return fmt.Errorf("--init %s: %w", initPath, err)
	}
	var recs []experience.Record
	if err := experience.ReadDir(dir, func(r experience.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		return fmt.Errorf("reading experience: %w", err)
	}
	// train.FineTune steps one network: an ensemble is fine-tuned as the
	// network of its members' mean Q-values (policy.MLP.Mean), the same
	// Q-values it serves, and comes out a plain model.
	tuned, st, err := train.FineTune(m.Mean(), recs, train.DQNConfig{Seed: seed}, epochs)
	if err != nil {
		return err
	}
	if version == "" {
		version = meta.Version + "+ft" + time.Now().UTC().Format("20060102")
	}
	nm := policy.CurrentMetadata(version, "fine-tuned from "+meta.Version+" on the experience log "+dir)
	// The init's training ranges stay with it, so the agent's guard keeps
	// falling back to its controller outside them after a promotion.
	nm.Ranges = meta.Ranges
	nm.Extra = map[string]string{"trainer": "triage train --experience", "init": meta.Version, "records": strconv.Itoa(st.Records), "skipped": strconv.Itoa(st.Skipped), "seed": strconv.FormatInt(seed, 10)}
	if err := writeModel(out, tuned, nm); err != nil {
		return err
	}
	fmt.Printf("fine-tuned on %d records (%d skipped), %d steps, loss %.4f -> %.4f; wrote %s\n", st.Records, st.Skipped, st.Steps, st.LossFirst, st.LossLast, out)
	return nil
}

// progress draws a bar on a terminal and plain lines otherwise (CI logs,
// pipes), so neither gets the other's noise.
type progress struct {
	w   io.Writer
	tty bool
}

func newProgress(f *os.File) *progress {
	st, err := f.Stat()
	return &progress{w: f, tty: err == nil && st.Mode()&os.ModeCharDevice != 0}
}

func (p *progress) episode(st train.EpisodeStats, perMember, members int) {
	total := perMember * members
	n := st.Member*perMember + st.Episode + 1
	val := ""
	if st.ValScore == st.ValScore { // not NaN
		val = fmt.Sprintf(" val=%.4f", st.ValScore)
	}
	if !p.tty {
		fmt.Fprintf(p.w, "episode %d/%d (member %d) %s eps=%.2f sla=%.4f reward=%.4f loss=%.4f%s\n", n, total, st.Member, st.Scenario, st.Epsilon, st.SLAAttainment, st.MeanReward, st.Loss, val)
		return
	}
	const width = 30
	done := n * width / max(1, total)
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d sla=%.3f%s   ", strings.Repeat("#", done), strings.Repeat(".", width-done), n, total, st.SLAAttainment, val)
}

func (p *progress) done() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
}
