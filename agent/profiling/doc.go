// Package profiling joins the BPF stack sampler (bpf.Profiler) to the
// flamegraph package: it drains a window, captures the mappings of the
// processes seen, symbolises, builds pprof profiles and (in Run) writes a
// window every interval into a flamegraph.Store. The CLI's
// `triage flamegraph record` and the agent both use it.
package profiling
