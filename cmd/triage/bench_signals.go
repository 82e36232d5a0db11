package main

import (
	"time"

	"github.com/triage-agent/triage/bpf"
	benchsignals "github.com/triage-agent/triage/internal/bench/signals"
)

func init() { registerBench("signals", runBenchSignals) }

// runBenchSignals is `triage bench signals` (internal/bench/signals).
func runBenchSignals(args []string) error {
	fs, asJSON := newBenchFlagSet("signals", "cost of the kernel-signal probes: BPF ns per event, added ns per context switch and per syscall (with and without, side by side), and the signals layer's RSS and CPU")
	rounds := fs.Int("rounds", 20000, "ping-pong round trips per run (2 context switches each)")
	calls := fs.Int("calls", 200000, "getppid calls per run")
	reps := fs.Int("reps", 11, "alternating without/with runs; medians and minima are reported")
	tierName := fs.String("tier", "auto", "tier of the probes: auto|tp_btf|raw_tp|tracepoint")
	peer := fs.Bool("peer", true, "also measure bpftrace's runqlat on the same ping-pong, when bpftrace is installed")
	fpDur := fs.Duration("footprint", 10*time.Second, "run a triage signals child this long, idle and under load, and report its RSS and CPU (0: skip)")
	if err := parseFlags(fs, args); err != nil {
		return helpIsNotAnError(err)
	}
	o := benchsignals.Options{Rounds: *rounds, Calls: *calls, Reps: *reps, Peer: *peer, Footprint: *fpDur}
	var err error
	if o.Tier, err = bpf.ParseTier(*tierName); err != nil {
		return err
	}
	res, err := benchsignals.Run(o)
	if err != nil {
		return err
	}
	return printTableAndJSON(res, *asJSON)
}
