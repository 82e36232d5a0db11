package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/triage-agent/triage/internal/bench/e2e"
	"github.com/triage-agent/triage/train"
)

func init() { registerBench("e2e", runBenchE2E) }

// runBenchE2E runs a scenario's arrivals on real CPU work under FIFO, a
// hand-written rule and the priorities of a separate `triage agent`
// process (internal/bench/e2e), and prints the metrics of `triage eval`
// and what the agent process cost.
func runBenchE2E(args []string) error {
	fs, asJSON := newBenchFlagSet("e2e", "Replay a scenario on real CPU work under FIFO and under the agent's priorities; print the metrics of `triage eval` (and with --json its JSON shape as the last line, plus an \"agent\" object).")
	scenario := fs.String("scenario", "", "scenario file (required)")
	scale := fs.Float64("scale", 0, "wall seconds per scenario second (0: min(1, 25/duration), a run under half a minute)")
	seed := fs.Int64("seed", 0, "arrival seed (0: the scenario's)")
	model := fs.String("model", "", "model for the agent (\"\": its embedded default)")
	agentBin := fs.String("agent-bin", "", "triage binary to run the agent with (\"\": this one)")
	concurrency := fs.Int("concurrency", 32, "decide calls in flight at once")
	decide := fs.String("decide", e2e.DecideLocal, "how the agent run gets priorities: local (from the decision table the agent pushes; tasks it does not answer go to the agent) or remote (a call for every task)")
	answerOrder := fs.String("answer-order", train.AdaptiveOrder.String(), "how the executor orders the agent's answers within a priority: adaptive (the default: deadline first, the longest set aside where the rest would miss their deadlines, late work counted at the node's slowdown), shortest (expected cost first) or deadline; the in-process rules keep their own (docs/policy.md, \"How the executor serves the answers\")")
	noEBPF := fs.Bool("no-ebpf", false, "run the agent without eBPF (procfs signals, no profiler)")
	cpuTime := fs.Bool("cpu-time", false, "count a task's cost as its worker's CPU time instead of wall time (oversubscribed machines then serve slower)")
	baseline := fs.String("baseline", "reserve-rule", "in-process baselines to run on the same real workers after FIFO, comma-separated, \"all\" or \"none\": "+strings.Join(e2e.BaselineNames, ", "))
	ioDir := fs.String("io-dir", os.TempDir(), "where a format-v2 scenario's tasks and neighbour writers write (a directory on the disk whose contention matters)")
	keep := fs.String("keep-dir", "", "keep the agent's experience log and flame graphs here (\"\": a temporary directory, removed)")
	measureDisk := fs.Bool("measure-disk", true, "for a scenario that writes to the disk, measure the disk's levels first (about 30 s: the calibration's writer counts, on --io-dir) and count the runs' I/O in its uncontended write")
	simulate := fs.Bool("simulate", true, "after runs at --scale 1, simulate the same policies and arrivals (triage eval) on the committed calibration and on the disk measured, and print real beside simulated")
	agentFirst := fs.Bool("agent-first", false, "run the agent right after FIFO, before the baselines (default: last); comparing both orders shows how much of a difference the node's drift over the bench makes")
	ablate := fs.String("ablate", "", "kernel: after the agent's run, run the same arrivals through a second agent blind to the kernel (--ablate kernel: the same model and guard, every kernel feature at its neutral value), row agent-ablated: what reading the kernel is worth on these workers")
	nodeOut := fs.String("node-out", "", "write the calibration of the disk measured (the committed one with its io levels measured again) here, for `triage eval --calibration`")
	if done, err := parseCommandFlags(fs, args); done {
		return err
	}
	if *scenario == "" {
		return errors.New("--scenario is required")
	}
	ablateKernel, err := parseAblate(*ablate)
	if err != nil {
		return err
	}
	order, err := train.ParseAnswerOrder(*answerOrder)
	if err != nil {
		return fmt.Errorf("--answer-order: %w", err)
	}
	if *decide != e2e.DecideLocal && *decide != e2e.DecideRemote {
		return fmt.Errorf("--decide %q: want %s or %s", *decide, e2e.DecideLocal, e2e.DecideRemote)
	}
	sc, err := train.LoadScenario(*scenario)
	if err != nil {
		return err
	}
	if err := e2e.CheckNode(sc); err != nil {
		return err
	}
	ctx := context.Background()
	nodes, unit, err := e2e.SimNodes(ctx, os.Stdout, sc, *ioDir, *measureDisk, *nodeOut)
	if err != nil {
		return err
	}
	rep, err := e2e.Bench(ctx, e2e.BenchConfig{
		Scenario: sc, Seed: *seed, TimeScale: *scale, CPUTime: *cpuTime, Baseline: *baseline,
		AgentBin: *agentBin, Model: *model, NoEBPF: *noEBPF, DecideConcurrency: *concurrency, Decide: *decide, AnswerOrder: order, KeepDir: *keep, IODir: *ioDir, IOWriteMs: unit,
		AgentFirst: *agentFirst, AblateKernel: ablateKernel,
		OnRun: func(r *e2e.Result) { fmt.Println(r) },
	})
	if err != nil {
		return err
	}
	// The simulator plays the scenario's own clock: a compressed run
	// shortens the tasks' CPU work and SLAs but not the disk's writes, so
	// only a run at --scale 1 is compared with it.
	if *simulate && rep.FIFO.TimeScale == 1 {
		sims, err := e2e.Simulate(sc, *seed, *model, rep, nodes)
		if err != nil {
			return fmt.Errorf("simulating the bench's policies: %w", err)
		}
		rep.Simulated = sims
	}
	if err := rep.WriteReport(os.Stdout, sc, *simulate); err != nil {
		return err
	}
	if *asJSON {
		return printOwnJSONLine(os.Stdout, rep)
	}
	return nil
}
