package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
	"github.com/triage-agent/triage/policy/defaultmodel"
	"github.com/triage-agent/triage/policy/guard"
	"github.com/triage-agent/triage/train"
)

func init() {
	register("eval", "run the DQN and every baseline on scenarios: SLA attainment, goodput, p50/p99", runEval)
}

func runEval(args []string) error {
	fs := newFlagSet("eval", "run the DQN (through ONNX Runtime) and every baseline on the same arrivals of each scenario")
	var scenarios stringList
	fs.Var(&scenarios, "scenario", "scenario file(s), repeatable or comma-separated")
	model := fs.String("model", "", "ONNX model (default: the embedded default model)")
	asJSON := fs.Bool("json", false, "end with one JSON object per scenario, one per line (the last line is the last scenario)")
	plot := fs.String("plot", "", "write an SVG of SLA attainment and goodput per policy (one file; scenario name added when several)")
	seed := fs.Int64("seed", 0, "arrival seed (0: the scenario's own)")
	seeds := fs.Int("seeds", 1, "average every metric over this many arrival seeds: the scenario's own (or --seed), then 1000, 2000, ...")
	device := fs.String("device", "cpu", "ONNX Runtime device: auto, cpu or cuda")
	lib := fs.String("onnxruntime-lib", "", "ONNX Runtime shared library (default: $TRIAGE_ONNXRUNTIME_LIB, then the cache)")
	generated := fs.Int("generated", 0, "also evaluate this many generated scenarios (train.Generate), and print their summary")
	genSeed := fs.Int64("gen-seed", 1, "seed of the generated scenarios")
	genWorkers := fs.String("gen-workers", "", "the worker counts the generated scenarios' nodes are drawn from, comma-separated (default: 2 to 16, as training): e.g. 24,32,48,64 asks whether a policy carries over to nodes larger than it was trained on")
	tune := fs.String("tune", "", "search the parameters of a controller (codel-lifo, shed-pi, gradient2, or all) on the scenarios instead of evaluating (docs/controllers.md)")
	guardName := fs.String("guard", guard.DefaultController, "the dqn row's guard, as the agent's --guard: a controller ("+strings.Join(control.GuardNames, ", ")+") or none")
	minAgree := fs.Float64("guard-min-agreement", guard.DefaultMinAgreement, "as the agent's --guard-min-agreement")
	minAdv := fs.Float64("guard-min-advantage", guard.DefaultMinAdvantage, "as the agent's --guard-min-advantage (0: off)")
	keepUrgent := fs.Float64("guard-keep-urgent-ms", guard.DefaultKeepUrgentMs, "as the agent's --guard-keep-urgent-ms (0: off)")
	ablate := fs.String("ablate", "", "kernel: add a dqn-ablated row, the same guarded model with every kernel feature at its neutral value")
	answerOrder := fs.String("answer-order", train.AdaptiveOrder.String(), "how the executor orders the agent's answers within a priority, for the dqn rows: adaptive (the agent's executors' default: deadline first, the longest set aside where the rest would miss their deadlines, late work counted at the node's slowdown), shortest (expected cost first) or deadline (docs/policy.md, \"How the executor serves the answers\")")
	perClass := fs.Bool("per-class", true, "print SLA attainment per class and policy after each scenario's table")
	varyNode := fs.Float64("vary-node", 0, "run each scenario and seed, with this probability, on a node that reads its kernel features unlike the calibrated one, as training does (docs/training.md, \"Varying the node\"): what a policy keeps on other machines; 0 reports on the calibrated node")
	noService := fs.Bool("no-service-times", false, "simulate an upstream that reports no service_ms: no policy knows the node's slowdown, so the background reserve follows the kernel alone, as the agent's does for such an upstream (docs/policy.md)")
	eagerAccept := fs.Bool("eager-accept", false, "simulate a service that accepts every connection at once and queues its work in process (as bench e2e's executor does): its listen queue stays empty, so the accept-queue feature reads 0 where the default node fills it with the executor's backlog (docs/policy-history.md, \"Expired work waits for a lull\")")
	calFile := fs.String("calibration", "", "simulate the node of this calibration file (triage calibrate --out) instead of the committed one")
	statesFrom := fs.String("states-from", "", "an agent's experience directory (e.g. from bench e2e --keep-dir) on the one --scenario: print each feature's spread there beside the simulated dqn's, then the model's network on every logged state beside the level the logged agent served, per class")
	if done, err := parseCommandFlags(fs, args); done {
		return err
	}
	if !(*varyNode >= 0 && *varyNode <= 1) {
		return fmt.Errorf("--vary-node %v: want a probability in [0, 1]", *varyNode)
	}
	node := train.EvalNode{Vary: *varyNode, NoServiceTimes: *noService, EagerAccept: *eagerAccept}
	if *calFile != "" {
		cal, err := train.LoadCalibration(*calFile)
		if err != nil {
			return fmt.Errorf("--calibration: %w", err)
		}
		node.Calibration = cal
	}
	order, err := train.ParseAnswerOrder(*answerOrder)
	if err != nil {
		return fmt.Errorf("--answer-order: %w", err)
	}
	ablateKernel, err := parseAblate(*ablate)
	if err != nil {
		return err
	}
	gen, err := parseGenWorkers(*genWorkers)
	if err != nil {
		return err
	}
	if *tune != "" {
		all, err := loadScenarios(scenarios)
		if err != nil {
			return err
		}
		return runTune(*tune, append(all, train.Generate(*genSeed, *generated, gen)...))
	}
	if len(scenarios) == 0 && *generated == 0 {
		return errors.New("no --scenario given")
	}
	if *statesFrom != "" && (len(scenarios) != 1 || *generated != 0) {
		return errors.New("--states-from compares with one --scenario, the one the agent ran")
	}
	cfg := policy.Config{Device: *device, LibraryPath: *lib}
	var sess *policy.Session
	if *model != "" {
		sess, err = policy.LoadFile(*model, cfg)
	} else {
		sess, err = policy.LoadBytes(defaultmodel.Bytes(), cfg)
	}
	if err != nil {
		return err
	}
	defer sess.Close()
	fmt.Printf("model %s on %s\n\n", sess.Version(), sess.Device())

	var lines [][]byte
	var all []*train.Scenario
	for _, f := range scenarios {
		sc, err := train.LoadScenario(f)
		if err != nil {
			return err
		}
		all = append(all, sc)
	}
	all = append(all, train.Generate(*genSeed, *generated, gen)...)
	var sum summary
	gcfg := guard.DefaultConfig()
	gcfg.MinAgreement = float32(*minAgree)
	gcfg.MinAdvantage = float32(*minAdv)
	gcfg.KeepUrgentMs = *keepUrgent
	for _, sc := range all {
		rows, guarded, err := modelRows(sess, *guardName, gcfg, ablateKernel, order)
		if err != nil {
			return err
		}
		list := train.SeedList(*seeds)
		list[0] = *seed
		ev, err := train.EvaluateSeedsOn(sc, list, node, append(rows, train.Baselines(sc)...)...)
		if err != nil {
			return err
		}
		sum.add(ev)
		if *seeds > 1 {
			fmt.Printf("(means over %d arrival seeds)\n", *seeds)
		}
		if err := ev.WriteMarkdown(os.Stdout); err != nil {
			return err
		}
		if guarded != nil {
			fmt.Printf("\nthe guard (%s) decided %d of the dqn row's %d decisions%s\n", *guardName, guarded.Guarded(), guarded.Decisions(), guardReasons(guarded))
		}
		if *perClass {
			fmt.Println()
			if err := ev.WriteClassMarkdown(os.Stdout); err != nil {
				return err
			}
			if len(ev.Periods) > 1 {
				fmt.Println()
				if err := ev.WritePeriodMarkdown(os.Stdout); err != nil {
					return err
				}
			}
		}
		fifo := ev.Policies["fifo"].GoodputPerS
		best, bv := ev.BestBaseline("dqn", func(m train.Metrics) float64 { return m.GoodputPerS })
		d := ev.Policies["dqn"]
		ratio := "inf"
		if fifo > 0 {
			ratio = fmt.Sprintf("%.2fx", d.GoodputPerS/fifo)
		}
		fmt.Printf("\ndqn goodput %s FIFO's; best baseline by goodput: %s (%.2f/s)\n\n", ratio, best, bv)
		if *statesFrom != "" {
			if err := writeStateComparison(os.Stdout, *statesFrom, sc, *seed, sess, *guardName, gcfg, order); err != nil {
				return err
			}
		}
		if *plot != "" {
			path := *plot
			if len(scenarios) > 1 {
				path = fmt.Sprintf("%s.%s.svg", trimSVG(path), sc.Name)
			}
			if err := writeEvalPlot(path, ev); err != nil {
				return err
			}
		}
		if *asJSON {
			b, err := ev.JSON()
			if err != nil {
				return err
			}
			lines = append(lines, b)
		}
	}
	if len(all) > 1 {
		sum.write(os.Stdout)
	}
	for _, l := range lines {
		fmt.Println(string(l))
	}
	return nil
}

// modelRows are train.ModelRows with a bad guard named as the flag.
func modelRows(sess policy.Decider, guardName string, cfg guard.Config, ablate bool, order train.AnswerOrder) ([]train.Policy, *train.GuardedPolicy, error) {
	rows, guarded, err := train.ModelRows(sess, guardName, cfg, ablate, order)
	if err != nil {
		return nil, nil, fmt.Errorf("--guard: %w", err)
	}
	return rows, guarded, nil
}

// summary is the mean of each policy's metrics over many scenarios, and
// how often and by how much each falls under the scenario's best baseline:
// the bar is "at least every baseline on every scenario", which a
// mean alone hides (a large win on one file pays for small losses on many).
type summary struct {
	order []string
	att   map[string]float64
	wins  map[string]int
	under map[string]int     // scenarios under the best baseline by more than underBy
	short map[string]float64 // sum over scenarios of min(0, attainment − best baseline's)
	n     int
}

// underBy is the margin under the best baseline that counts as a loss:
// half a point, the "visible margin".
const underBy = 0.005

func (s *summary) add(ev *train.Evaluation) {
	if s.att == nil {
		s.order, s.att, s.wins = ev.Order, map[string]float64{}, map[string]int{}
		s.under, s.short = map[string]int{}, map[string]float64{}
	}
	best := -1.0
	for _, n := range ev.Order {
		s.att[n] += ev.Policies[n].SLAAttainment
		best = max(best, ev.Policies[n].SLAAttainment)
	}
	_, rule := ev.BestBaseline("dqn", func(m train.Metrics) float64 { return m.SLAAttainment })
	for _, n := range ev.Order {
		a := ev.Policies[n].SLAAttainment
		if a >= best-1e-9 {
			s.wins[n]++
		}
		if a < rule-underBy {
			s.under[n]++
		}
		s.short[n] += min(0, a-rule)
	}
	s.n++
}

func (s *summary) write(w io.Writer) {
	fmt.Fprintf(w, "### mean over %d scenarios\n\n", s.n)
	fmt.Fprintf(w, "| policy | mean SLA attainment | best on | under the best baseline by >%.1f pt on | mean shortfall to the best baseline (pt) |\n| --- | ---: | ---: | ---: | ---: |\n", underBy*100)
	for _, n := range s.order {
		fmt.Fprintf(w, "| %s | %.4f | %d | %d | %.2f |\n", n, s.att[n]/float64(s.n), s.wins[n], s.under[n], 100*s.short[n]/float64(s.n))
	}
	fmt.Fprintln(w)
}

func trimSVG(p string) string {
	if len(p) > 4 && p[len(p)-4:] == ".svg" {
		return p[:len(p)-4]
	}
	return p
}

func writeEvalPlot(path string, ev *train.Evaluation) error {
	var att, good []float64
	for _, n := range ev.Order {
		att = append(att, ev.Policies[n].SLAAttainment)
		good = append(good, ev.Policies[n].GoodputPerS)
	}
	a := train.BarPlotSVG(ev.Scenario+": SLA attainment", ev.Order, att, "%.4f")
	g := train.BarPlotSVG(ev.Scenario+": weighted goodput (tasks/s)", ev.Order, good, "%.1f")
	// Two plots stacked in one self-contained SVG.
	doc := fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="640" height="520"><g>%s</g><g transform="translate(0 260)">%s</g></svg>`+"\n", a, g)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("writing plot: %w", err)
	}
	return nil
}

func loadScenarios(files []string) ([]*train.Scenario, error) {
	var out []*train.Scenario
	for _, f := range files {
		sc, err := train.LoadScenario(f)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// runTune prints each searched controller's grid, best first.
func runTune(which string, scenarios []*train.Scenario) error {
	grids := train.ControllerGrids()
	names := []string{which}
	if which == "all" {
		names = control.GuardNames
	}
	for _, n := range names {
		grid, ok := grids[n]
		if !ok {
			return fmt.Errorf("--tune %q: not a controller (%v)", n, control.GuardNames)
		}
		res, err := train.Tune(scenarios, grid)
		if err != nil {
			return err
		}
		fmt.Printf("### %s: %d settings on %d scenarios\n\n| setting | mean SLA attainment | mean goodput (/s) |\n| --- | ---: | ---: |\n", n, len(grid), len(scenarios))
		for _, r := range res {
			fmt.Printf("| %s | %.4f | %.2f |\n", r.Label, r.SLAAttainment, r.GoodputPerS)
		}
		fmt.Println()
	}
	return nil
}

// evalGuard is a new guard of --guard's controller (each holds its own
// controller state, so every guarded row and the replay get their own);
// nil for "none".
func evalGuard(name string, cfg guard.Config) (*guard.Guard, error) {
	g, err := guard.NamedOrNone(name, cfg)
	if err != nil {
		return nil, fmt.Errorf("--guard: %w", err)
	}
	return g, nil
}

// guardReasons is why the guard took the decisions it took, as the agent's
// triage_guard_decisions_total labels them: " (disagree 12, ...)".
func guardReasons(p *train.GuardedPolicy) string {
	var parts []string
	for r, c := range p.Counts {
		if guard.Reason(r) != guard.Network && c > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", guard.Reason(r), c))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
