package profiler

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes r as `triage bench profiler` prints it: one row per
// frequency and unwind mode.
func (r *Result) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "machine\t%s, %d CPUs, all busy\n", r.Machine, r.CPUs)
	fmt.Fprintln(tw, "hz\tunwind\toff-cpu\tagent CPU%\tBPF CPU%\tBPF ns/sample\tRSS before MiB\tRSS MiB\tpeak RSS MiB\tsymbol cache MiB\tsamples\tFP fallbacks\twindows\tstore bytes")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%d\t%s\t%v\t%.3f\t%.3f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d\t%d\n", x.Hz, x.Unwind, x.OffCPU, x.AgentCPUPct, x.BPFCPUPct, x.BPFNsPerSample,
			x.BaseRSSMiB, x.RSSMiB, x.PeakRSSMiB, x.SymbolCacheMiB, x.Samples, x.Fallbacks, x.Windows, x.StoreBytes)
	}
	tw.Flush()
}
