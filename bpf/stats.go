package bpf

import (
	"fmt"
	"io"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// ProgramStats is the kernel's run-time accounting of one loaded program.
// It counts only while EnableRunStats is on. Programs run in the context of
// the task they interrupt, so their time is charged to that task, not to the
// agent: these figures are the only place it shows.
type ProgramStats struct {
	Name     string
	RunCount uint64
	Runtime  time.Duration
}

// NsPerRun is the mean run time in nanoseconds; 0 before the first run.
func (s ProgramStats) NsPerRun() float64 {
	if s.RunCount == 0 {
		return 0
	}
	return float64(s.Runtime.Nanoseconds()) / float64(s.RunCount)
}

// TotalRunTime sums the run time of every program in stats.
func TotalRunTime(stats []ProgramStats) time.Duration {
	var d time.Duration
	for _, s := range stats {
		d += s.Runtime
	}
	return d
}

// programStats reads one program's accounting.
func programStats(name string, prog *ebpf.Program) (ProgramStats, error) {
	s, err := prog.Stats()
	if err != nil {
		return ProgramStats{}, fmt.Errorf("stats of %s: %w", name, err)
	}
	return ProgramStats{Name: name, RunCount: s.RunCount, Runtime: s.Runtime}, nil
}

// EnableRunStats turns on kernel.bpf_stats_enabled until the returned
// closer is closed. It is off by default because it adds two clock reads to
// every program run.
func EnableRunStats() (io.Closer, error) {
	c, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return nil, fmt.Errorf("enabling BPF run-time stats: %w", err)
	}
	return c, nil
}
