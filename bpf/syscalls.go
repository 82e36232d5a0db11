package bpf

import "fmt"

// SyscallsOptions configure OpenSyscalls; the zero value means auto tier.
type SyscallsOptions struct {
	Tier Tier
}

var syscallsHooks = []hook{
	{group: "raw_syscalls", name: "sys_enter", btf: "syscalls_btf_enter", raw: "syscalls_raw_enter", tp: "syscalls_tp_enter"},
	{group: "raw_syscalls", name: "sys_exit", btf: "syscalls_btf_exit", raw: "syscalls_raw_exit", tp: "syscalls_tp_exit"},
}

// Syscalls measures syscall latency of watched processes or cgroups.
// raw_syscalls hooks tax every syscall on the node (the tracepoint slow
// path plus the filter), so the programs are attached only while
// something is watched: an empty watch set costs nothing.
type Syscalls struct {
	p       *probe
	reader  *percpuHist
	pids    map[uint32]bool
	cgroups map[uint64]bool
	all     bool
}

// OpenSyscalls loads and attaches the syscall latency programs.
func OpenSyscalls(opts SyscallsOptions) (*Syscalls, error) {
	p, err := openProbe("syscalls", loadSyscalls, syscallsHooks, opts.Tier)
	if err != nil {
		return nil, err
	}
	rd, err := newPercpuHist()
	if err != nil {
		p.Close()
		return nil, err
	}
	// Attaching proved the tier works; stay detached until a watch.
	if err := p.detach(); err != nil {
		p.Close()
		return nil, err
	}
	return &Syscalls{p: p, reader: rd, pids: map[uint32]bool{}, cgroups: map[uint64]bool{}}, nil
}

// Attached reports whether the programs are linked (something is watched).
func (s *Syscalls) Attached() bool { return len(s.p.links) > 0 }

// Tier is the tier that attached.
func (s *Syscalls) Tier() Tier { return s.p.tier }

// Attempts lists the tiers tried before the one that attached.
func (s *Syscalls) Attempts() []TierAttempt { return s.p.attempts }

func (s *Syscalls) syncFlags() error {
	var f uint32
	if len(s.pids) > 0 {
		f |= flagWatchPIDs
	}
	if len(s.cgroups) > 0 {
		f |= flagWatchCgroups
	}
	if s.all {
		f |= flagWatchAll
	}
	if err := setConfigFlags(s.p.mapNamed("syscalls_config"), f); err != nil {
		return err
	}
	if f == 0 {
		return s.p.detach()
	}
	return s.p.attach()
}

// WatchPID adds a process (thread-group id) to the watched set.
func (s *Syscalls) WatchPID(pid uint32) error {
	if err := s.p.mapNamed("syscalls_pids").Put(pid, uint8(1)); err != nil {
		return fmt.Errorf("watching pid %d: %w", pid, err)
	}
	s.pids[pid] = true
	return s.syncFlags()
}

// UnwatchPID removes a process from the watched set.
func (s *Syscalls) UnwatchPID(pid uint32) error {
	if !s.pids[pid] {
		return nil
	}
	delete(s.pids, pid)
	if err := s.p.mapNamed("syscalls_pids").Delete(pid); err != nil {
		return fmt.Errorf("unwatching pid %d: %w", pid, err)
	}
	return s.syncFlags()
}

// WatchCgroup adds a cgroup v2 id; a task counts when it is directly in it.
func (s *Syscalls) WatchCgroup(id uint64) error {
	if err := s.p.mapNamed("syscalls_cgroups").Put(id, uint8(1)); err != nil {
		return fmt.Errorf("watching cgroup %d: %w", id, err)
	}
	s.cgroups[id] = true
	return s.syncFlags()
}

// WatchAll times every task's syscalls (costly; for benchmarks and tests).
func (s *Syscalls) WatchAll(on bool) error {
	s.all = on
	return s.syncFlags()
}

// Read stores the cumulative histogram of the watched set in dst.
func (s *Syscalls) Read(dst *Hist) error {
	if err := s.reader.read(s.p.mapNamed("syscalls_hist"), uint32(0), dst); err != nil {
		return fmt.Errorf("reading syscall histogram: %w", err)
	}
	return nil
}

// Stats reports each program's kernel run-time accounting.
func (s *Syscalls) Stats() ([]ProgramStats, error) { return s.p.stats() }

// Close detaches and unloads the programs.
func (s *Syscalls) Close() error { return s.p.Close() }
