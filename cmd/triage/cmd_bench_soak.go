package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/triage-agent/triage/internal/bench/soak"
)

func init() { registerBench("soak", runBenchSoak) }

// runBenchSoak runs one `triage agent` process under sustained mixed load
// (internal/bench/soak) and prints its memory, goroutines, descriptors
// and what reached the experience log.
func runBenchSoak(args []string) error {
	fs := newFlagSet("bench soak", "Run one agent process under sustained mixed load (decide calls with outcomes, subscribers, connection churn, malformed frames, model hot reloads, every probe and the profiler) and sample its RSS, heap, goroutines and descriptors every second; with --json, end with one JSON object.")
	var cfg soak.Config
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Minute, "the whole run, warm-up included")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Minute, "time before the start samples are taken")
	fs.IntVar(&cfg.Rate, "rate", 5000, "decided tasks a second, over all deciders")
	fs.IntVar(&cfg.Clients, "clients", 16, "decider connections")
	fs.IntVar(&cfg.Batch, "batch", 1, "tasks per decide call")
	fs.IntVar(&cfg.Subscribers, "subscribers", 8, "node-state subscribers, half of them on QUIC datagrams")
	fs.IntVar(&cfg.Churn, "churn", 50, "connections a second made and closed by the churning client")
	fs.IntVar(&cfg.MalformedRate, "malformed", 20, "malformed frames a second")
	fs.DurationVar(&cfg.ReloadEvery, "reload-every", 30*time.Second, "how often the model file is replaced by a new version")
	fs.StringVar(&cfg.AgentBin, "agent-bin", "", "triage binary to run the agent with (\"\": this one)")
	fs.BoolVar(&cfg.NoEBPF, "no-ebpf", false, "run the agent without eBPF (procfs signals, no profiler)")
	fs.StringVar(&cfg.KeepDir, "keep-dir", "", "keep the agent's experience log, flame graphs and model here (\"\": a temporary directory, removed; the log takes about 250 bytes per outcome)")
	asJSON := fs.Bool("json", false, "end with one JSON object")
	addConfigFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return helpIsNotAnError(err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg.Progress = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("soak: %v (warm-up %v), %d tasks/s over %d clients, %d subscribers, %d connections/s of churn, %d malformed frames/s, a model reload every %v\n",
		cfg.Duration, cfg.Warmup, cfg.Rate, cfg.Clients, cfg.Subscribers, cfg.Churn, cfg.MalformedRate, cfg.ReloadEvery)
	res, err := soak.Run(ctx, cfg)
	if res != nil {
		writeSoakReport(os.Stdout, res)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		line, err := res.JSON()
		if err != nil {
			return err
		}
		fmt.Println(string(line))
	}
	return nil
}

// soakGoals are the figures an operator is promised (README): what the run
// is checked against in its report.
func soakGoals(r *soak.Result) []struct {
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
	}
}

func writeSoakReport(w io.Writer, r *soak.Result) {
	d := &r.Detail
	fmt.Fprintf(w, "\n%.0f s: %d decisions (%.0f/s), %d decide errors, %d outcomes acknowledged (%d reports failed), %d experience records (%d of tasks timed out), %d lost\n",
		r.DurationS, r.Decisions, float64(r.Decisions)/max(r.DurationS, 1), r.DecideErrors, r.Outcomes, d.OutcomeErrors, r.ExperienceRecords, d.TimedOutRecords, r.LostRecords)
	fmt.Fprintf(w, "decide round trip after the warm-up: p50 %.0f µs, p99 %.0f µs\n", d.P50Us, r.P99Us)
	fmt.Fprintf(w, "| | after the warm-up (%v) | end |\n| --- | ---: | ---: |\n", d.Warmup)
	fmt.Fprintf(w, "| RSS (MiB) | %.1f | %.1f (%+.1f%%, peak %.1f) |\n", r.RSSMiBStart, r.RSSMiBEnd, r.RSSGrowthPct, d.RSSMiBPeak)
	fmt.Fprintf(w, "| Go heap (MiB) | %.1f | %.1f |\n", d.HeapMiBStart, d.HeapMiBEnd)
	fmt.Fprintf(w, "| goroutines | %d | %d |\n| open descriptors | %d | %d |\n", r.GoroutinesStart, r.GoroutinesEnd, r.FDsStart, r.FDsEnd)
	fmt.Fprintf(w, "subscribers received %d snapshots; churn %d connections (%d failed); %d malformed frames answered with a stream error (%d reconnects); %d model files written, %d swapped in, %d refused\n",
		d.Snapshots, d.ChurnConnects, d.ChurnFailures, d.MalformedSent, d.MalformedReconnects, d.Reloads, d.Swaps, d.ReloadFails)
	fmt.Fprintf(w, "agent: %d probes attached, %d flame-graph windows, %.0f outcomes for untracked tasks, %.0f experience segments removed by the cap\n",
		d.ProbesAttached, d.FlamegraphWindows, d.UnknownOutcomes, d.SegmentsRemoved)
	for _, g := range soakGoals(r) {
		verdict := "met"
		if !g.ok {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "goal: %s: %s\n", g.what, verdict)
	}
}
