package signals

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes r as `triage bench signals` prints it: the added cost
// per context switch and per syscall, each program's cost, and the signals
// layer's footprint.
func (r *Result) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
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
