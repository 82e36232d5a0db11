package main

import (
	"fmt"
	"os"
	"text/tabwriter"
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
	printSignalsBench(res)
	if *asJSON {
		return printJSONLine(os.Stdout, res)
	}
	return nil
}

func printSignalsBench(r *benchsignals.Result) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "machine: %s; tier %s; %d alternating runs, median (min)\n\n", r.Machine, r.Tier, r.Reps)
	fmt.Fprintln(tw, "MEASURE\tWITHOUT\tWITH\tADDED")
	row := func(name string, b, w, bm, wm float64) {
		fmt.Fprintf(tw, "%s\t%.0f (%.0f) ns\t%.0f (%.0f) ns\t%+.0f (%+.0f) ns\n", name, b, bm, w, wm, w-b, wm-bm)
	}
	row("context switch (triage runqlat)", r.SwitchNsBase, r.SwitchNsTriage, r.SwitchMinNsBase, r.SwitchMinNsTriage)
	row("context switch (triage, 1 in 4 sampled)", r.SwitchNsBase, r.SwitchNsSampled4, r.SwitchMinNsBase, r.SwitchMinNsSampled4)
	if r.SwitchNsBpftrace > 0 {
		row("context switch (bpftrace runqlat)", r.SwitchNsBase, r.SwitchNsBpftrace, r.SwitchMinNsBase, r.SwitchMinNsBpftrace)
	}
	row("getppid, probes attached, not watched", r.SyscallNsBase, r.SyscallNsUnwatched, r.SyscallMinNsBase, r.SyscallMinNsUnwatched)
	row("getppid, this process watched", r.SyscallNsBase, r.SyscallNsWatched, r.SyscallMinNsBase, r.SyscallMinNsWatched)
	fmt.Fprintln(tw, "\nPROGRAM\tRUNS\tNS/RUN\t")
	fmt.Fprintf(tw, "(empty tp_btf program: the floor)\t\t%.1f\t\n", r.FloorNsPerRun)
	for _, p := range r.Programs {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t\n", p.Name, p.RunCount, p.NsPerRun)
	}
	if len(r.Footprint) > 0 {
		fmt.Fprintln(tw, "\nSIGNALS LAYER\tRSS\tCPU\tSOURCES")
		for _, m := range []string{"idle", "load"} {
			if f := r.Footprint[m]; f != nil {
				fmt.Fprintf(tw, "%s (%.0f s)\t%.1f MiB\t%.3f %%\t%s\n", m, f.Seconds, f.RSSMiB, f.CPUPercent, f.Sources)
			}
		}
	}
	tw.Flush()
}
