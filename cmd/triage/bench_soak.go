package main

import (
	"context"
	"fmt"
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
	fs, asJSON := newBenchFlagSet("soak", "Run one agent process under sustained mixed load (decide calls with outcomes, subscribers, connection churn, malformed frames, model hot reloads, every probe and the profiler) and sample its RSS, heap, goroutines and descriptors every second; with --json, end with one JSON object.")
	var cfg soak.Config
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Minute, "the whole run, warm-up included")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Minute, "time before the start samples are taken")
	fs.IntVar(&cfg.Rate, "rate", 5000, "decided tasks a second, over all deciders")
	fs.IntVar(&cfg.Clients, "clients", 16, "decider connections")
	fs.IntVar(&cfg.MaxInFlight, "max-in-flight", 64, "decide calls a decider keeps unanswered at most (the load is open loop: calls go on a schedule; one due past this is not sent, and counted)")
	fs.IntVar(&cfg.Batch, "batch", 1, "tasks per decide call")
	fs.IntVar(&cfg.Subscribers, "subscribers", 8, "node-state subscribers, half of them on QUIC datagrams")
	fs.IntVar(&cfg.Churn, "churn", 50, "connections a second made and closed by the churning client")
	fs.IntVar(&cfg.MalformedRate, "malformed", 20, "malformed frames a second")
	fs.DurationVar(&cfg.ReloadEvery, "reload-every", 30*time.Second, "how often the model file is replaced by a new version")
	fs.StringVar(&cfg.AgentBin, "agent-bin", "", "triage binary to run the agent with (\"\": this one)")
	fs.BoolVar(&cfg.NoEBPF, "no-ebpf", false, "run the agent without eBPF (procfs signals, no profiler)")
	fs.StringVar(&cfg.KeepDir, "keep-dir", "", "keep the agent's experience log, flame graphs and model here (\"\": a temporary directory, removed; the log takes about 250 bytes per outcome)")
	if done, err := parseCommandFlags(fs, args); done {
		return err
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
		res.WriteReport(os.Stdout)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printOwnJSONLine(os.Stdout, res)
	}
	return nil
}
