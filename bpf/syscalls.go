package bpf

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// SyscallsOptions configure OpenSyscalls; the zero value means auto tier.
type SyscallsOptions struct {
	Tier Tier
}

// Bounds of the syscall probe's maps (their max_entries): watching
// cannot grow kernel memory without limit.
const (
	// MaxSyscallWatchedPIDs is how many processes the watch set holds
	// (syscalls_pids).
	MaxSyscallWatchedPIDs = 1024
	// MaxSyscallWatchedCgroups is how many cgroups it holds
	// (syscalls_cgroups).
	MaxSyscallWatchedCgroups = 256
	// MaxSyscallsInFlight is how many watched threads can be inside a
	// syscall at once and be timed (syscalls_start); the syscalls of a
	// thread beyond it are counted by Untimed.
	MaxSyscallsInFlight = 16384
)

// ErrSyscallWatchFull is returned by WatchPID and WatchCgroup when the
// watch map already holds MaxSyscallWatchedPIDs processes or
// MaxSyscallWatchedCgroups cgroups: that process's or cgroup's syscalls
// are not timed.
var ErrSyscallWatchFull = errors.New("the syscall probe's watch map is full")

var syscallsHooks = []hook{
	{group: "raw_syscalls", name: "sys_enter", btf: "syscalls_btf_enter", raw: "syscalls_raw_enter", tp: "syscalls_tp_enter"},
	{group: "raw_syscalls", name: "sys_exit", btf: "syscalls_btf_exit", raw: "syscalls_raw_exit", tp: "syscalls_tp_exit"},
	// A thread that ends inside exit or exit_group never reaches sys_exit:
	// its entry stamp is dropped here instead of filling the map.
	{group: "sched", name: "sched_process_exit", btf: "syscalls_btf_task_exit", raw: "syscalls_raw_task_exit", tp: "syscalls_tp_task_exit"},
}

// Syscalls measures syscall latency of watched processes or cgroups.
// raw_syscalls hooks tax every syscall on the node (the tracepoint slow
// path plus the filter), so the programs are attached only while
// something is watched: an empty watch set costs nothing.
type Syscalls struct {
	*probe
	reader  *percpuHist
	untimed []uint64 // per-CPU read buffer of syscalls_untimed
	pids    map[uint32]bool
	cgroups map[uint64]bool
	all     bool
}

// OpenSyscalls loads and attaches the syscall latency programs.
func OpenSyscalls(opts SyscallsOptions) (*Syscalls, error) {
	p, rd, err := openHistProbe("syscalls", loadSyscalls, syscallsHooks, opts.Tier)
	if err != nil {
		return nil, err
	}
	// Attaching proved the tier works; stay detached until a watch.
	if err := p.detach(); err != nil {
		p.Close()
		return nil, err
	}
	// syscalls_untimed is per-CPU like the histogram: its buffer has one
	// value per possible CPU too.
	untimed := make([]uint64, len(rd.buf))
	return &Syscalls{probe: p, reader: rd, untimed: untimed, pids: map[uint32]bool{}, cgroups: map[uint64]bool{}}, nil
}

// Attached reports whether the programs are linked (something is watched).
func (s *Syscalls) Attached() bool { return len(s.links) > 0 }

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
	if err := setConfigFlags(s.mapNamed("syscalls_config"), f); err != nil {
		return err
	}
	if f == 0 {
		return s.detach()
	}
	return s.attach()
}

// WatchPID adds a process (thread-group id) to the watched set; past
// MaxSyscallWatchedPIDs it is ErrSyscallWatchFull.
func (s *Syscalls) WatchPID(pid uint32) error {
	return watchKey(s, "syscalls_pids", s.pids, pid, "pid", "processes")
}

// UnwatchPID removes a process from the watched set.
func (s *Syscalls) UnwatchPID(pid uint32) error {
	if !s.pids[pid] {
		return nil
	}
	delete(s.pids, pid)
	if err := s.mapNamed("syscalls_pids").Delete(pid); err != nil {
		return fmt.Errorf("unwatching pid %d: %w", pid, err)
	}
	return s.syncFlags()
}

// WatchCgroup adds a cgroup v2 id; a task counts when it is directly in
// it. Past MaxSyscallWatchedCgroups it is ErrSyscallWatchFull.
func (s *Syscalls) WatchCgroup(id uint64) error {
	return watchKey(s, "syscalls_cgroups", s.cgroups, id, "cgroup", "cgroups")
}

// WatchAll times every task's syscalls (costly; for benchmarks and tests).
func (s *Syscalls) WatchAll(on bool) error {
	s.all = on
	return s.syncFlags()
}

// Read stores the cumulative histogram of the watched set in dst.
func (s *Syscalls) Read(dst *Hist) error {
	if err := s.reader.read(s.mapNamed("syscalls_hist"), uint32(0), dst); err != nil {
		return fmt.Errorf("reading syscall histogram: %w", err)
	}
	return nil
}

// watchKey adds key to the watch map mapName and to held, the keys it
// holds: a key already held is not a new entry, and a full map (a hash
// map's answer to a new key when full is E2BIG) is ErrSyscallWatchFull.
// kind names one key in errors, kinds the held ones.
func watchKey[K uint32 | uint64](s *Syscalls, mapName string, held map[K]bool, key K, kind, kinds string) error {
	if held[key] {
		return nil
	}
	if err := s.mapNamed(mapName).Put(key, uint8(1)); err != nil {
		if errors.Is(err, unix.E2BIG) {
			err = fmt.Errorf("%w (%d %s)", ErrSyscallWatchFull, len(held), kinds)
		}
		return fmt.Errorf("watching %s %d: %w", kind, key, err)
	}
	held[key] = true
	return s.syncFlags()
}

// Untimed is how many syscalls of watched tasks were not timed because
// MaxSyscallsInFlight threads were already in one, since the probe was
// loaded.
func (s *Syscalls) Untimed() (uint64, error) {
	if err := s.mapNamed("syscalls_untimed").Lookup(uint32(0), &s.untimed); err != nil {
		return 0, fmt.Errorf("reading untimed syscalls: %w", err)
	}
	var n uint64
	for _, v := range s.untimed {
		n += v
	}
	return n, nil
}
