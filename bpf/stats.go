package bpf

import (
	"fmt"
	"io"
	"time"

	"github.com/cilium/ebpf"
)

// ProgramCost is the in-kernel cost of the profiler's programs: they run in
// the context of the task they interrupt, so their time is charged to that
// task, not to the agent process, and only BPF run-time statistics show it
// (switch them on with EnableProfilerRunStats).
type ProgramCost struct {
	Runtime time.Duration
	Runs    uint64
}

// Cost sums the run-time statistics of the sampler and off-CPU programs.
func (p *Profiler) Cost() (ProgramCost, error) {
	var c ProgramCost
	progs := []*ebpf.Program{p.on.ProfileSample}
	if p.off != nil {
		progs = append(progs, p.off.OffcpuSwitchBtf, p.off.OffcpuSwitchRaw, p.off.OffcpuSwitchTp)
	}
	for _, prog := range progs {
		if prog == nil {
			continue
		}
		st, err := prog.Stats()
		if err != nil {
			return c, fmt.Errorf("reading program stats: %w", err)
		}
		c.Runtime += st.Runtime
		c.Runs += st.RunCount
	}
	return c, nil
}

// EnableProfilerRunStats switches on the kernel's BPF run-time accounting
// (it adds two clock reads per program run, so it is off by default) until
// the returned closer is closed.
func EnableProfilerRunStats() (io.Closer, error) {
	c, err := ebpf.EnableStats(0) // BPF_STATS_RUN_TIME
	if err != nil {
		return nil, fmt.Errorf("enabling BPF run-time stats: %w", err)
	}
	return c, nil
}
