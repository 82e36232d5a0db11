package signals

import "github.com/triage-agent/triage/bpf"

// The in-kernel CPU time of the probes (ProbeStatus.CPUSeconds). A BPF
// program runs in the context of the task it interrupts, so its time is
// charged to that task, not to the agent: the kernel's run-time accounting
// (kernel.bpf_stats_enabled) is the only place it shows. The accounting adds
// two clock reads to every program run, so it is on only with
// Config.ProbeCPUStats.

// programStatser is a loaded probe with run-time accounting.
type programStatser interface {
	Stats() ([]bpf.ProgramStats, error)
}

// probeCPU is p's total run time in seconds, 0 when p is not loaded (a nil
// pointer in the interface) or its stats cannot be read.
func probeCPU[P interface {
	*T
	programStatser
}, T any](p P) float64 {
	if p == nil {
		return 0
	}
	st, err := p.Stats()
	if err != nil {
		return 0
	}
	return bpf.TotalRunTime(st).Seconds()
}

// fillProbeCPU sets each probe's CPUSeconds (the caller holds c.mu).
func (c *Collector) fillProbeCPU() {
	c.runq.status.CPUSeconds = probeCPU(c.runq.probe)
	c.accept.status.CPUSeconds = probeCPU(c.accept.probe)
	c.blkio.status.CPUSeconds = probeCPU(c.blkio.probe)
	c.sys.status.CPUSeconds = probeCPU(c.sys.probe)
	c.tcp.status.CPUSeconds = probeCPU(c.tcp.probe)
}

// enableRunStats turns the kernel's accounting on for the collector's life.
func (c *Collector) enableRunStats() {
	closer, err := bpf.EnableRunStats()
	if err != nil {
		c.runStatsErr = err
		return
	}
	c.runStats = closer
}
