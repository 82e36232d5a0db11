package agent

import "runtime"

// DefaultWindowMaxProcs is `triage agent`'s GOMAXPROCS while a flame-graph
// window is built and written (--window-max-procs): 2, so decide calls are
// read and answered beside a window instead of behind it; 1 keeps the
// window on the agent's one P.
//
// Why: on one P, a window's work (naming its kernel frames from
// /proc/kallsyms, symbolising, writing pprof and SVG: 70 to 90 ms here)
// holds the P, and the goroutines that read and answer decide calls wait
// for the runtime's next look at the network, up to 10 ms, however short
// their own work. That wait is not in triage_decide_latency_seconds (it
// starts once a request is read) but in every caller's round trip. Under
// `bench e2e --decide remote` with 10 s windows the round trip's p99 was
// lower or level with a second P in 14 alternating pairs over two VMs
// (mean 5.1 against 9.1 ms on the first, 4.0 against 7.0 on the second);
// what it costs in CPU was +2.2 points of a core over five pairs from one
// file on the first VM, −0.7 over five others, and +0.03 over four on the
// second (6.62 against 6.59%), where the agent is at two thirds of the
// issue's 10% (docs/footprint-history.md, "A second P while a window
// runs").
const DefaultWindowMaxProcs = 2

// windowProcs raises GOMAXPROCS from base to during for each flame-graph
// window and lowers it again after (Config.WindowMaxProcs). The zero
// value does nothing.
type windowProcs struct{ base, during int }

// newWindowProcs is the window's Ps for an agent that set GOMAXPROCS to
// applied where the runtime's own default (one P per CPU its cgroup
// allows) was available, asked for want: min(want, available) where the
// agent runs on one P and more are available and wanted, else none. An
// operator's GOMAXPROCS in the environment is left alone, as
// applyMaxProcs leaves it.
func newWindowProcs(applied, available, want int) windowProcs {
	if maxProcsFromEnvironment() || applied != 1 || available <= applied || want <= applied {
		return windowProcs{}
	}
	return windowProcs{base: applied, during: min(want, available)}
}

// begin gives the window its Ps: a stop of the world, tens of µs, once a
// window.
func (w windowProcs) begin() {
	if w.during > w.base {
		runtime.GOMAXPROCS(w.during)
	}
}

// end takes them back.
func (w windowProcs) end() {
	if w.during > w.base {
		runtime.GOMAXPROCS(w.base)
	}
}
