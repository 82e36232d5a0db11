package signals

import (
	"errors"
	"fmt"
	"time"

	"github.com/triage-agent/triage/bpf"
)

// syscallSource feeds SyscallSignal from the syscalls probe, filtered in
// the kernel to the watched pids and cgroups. procfs has no per-syscall
// timing, so without eBPF the signal has no source.
type syscallSource struct {
	src     Source
	status  ProbeStatus
	probe   *bpf.Syscalls
	win     *Window
	cum     bpf.Hist
	watched int

	// pidsOverflow and cgroupsOverflow count the watches refused because
	// the probe's watch map was full; untimed is the probe's count of
	// watched syscalls its in-flight map had no room for.
	pidsOverflow, cgroupsOverflow int
	untimed                       uint64
}

func newSyscallSource(cfg *Config, bpfErr error) *syscallSource {
	s := &syscallSource{status: ProbeStatus{Name: ProbeSyscalls}, win: NewWindow(cfg.Window, cfg.Interval)}
	probe, err := openProbe(&s.status, bpfErr, func() (*bpf.Syscalls, error) { return bpf.OpenSyscalls(bpf.SyscallsOptions{Tier: cfg.Tier}) })
	if err != nil {
		s.src = fallbackSource(SourceNone, err, "procfs has no syscall timing")
		return s
	}
	s.probe = probe
	for _, pid := range cfg.WatchPIDs {
		if err := s.watchPID(pid); err != nil {
			s.status.Reason = err.Error()
		}
	}
	for _, p := range cfg.WatchCgroups {
		if err := s.watchCgroup(p); err != nil {
			s.status.Reason = err.Error()
		}
	}
	s.setSource()
	return s
}

func (s *syscallSource) setSource() {
	if s.watched == 0 {
		s.src = Source{Kind: SourceNone, Reason: "probe attached, nothing watched (set watched pids or cgroups)"}
		return
	}
	s.src = Source{Kind: SourceEBPF}
}

func (s *syscallSource) watchPID(pid int) error {
	if s.probe == nil {
		return fmt.Errorf("watching pid %d: syscall probe not attached", pid)
	}
	if pid <= 0 || pid > 1<<22 {
		return fmt.Errorf("watching pid %d: out of range", pid)
	}
	if err := s.probe.WatchPID(uint32(pid)); err != nil {
		if errors.Is(err, bpf.ErrSyscallWatchFull) {
			s.pidsOverflow++
		}
		return err
	}
	s.watched++
	s.setSource()
	return nil
}

func (s *syscallSource) watchCgroup(path string) error {
	if s.probe == nil {
		return fmt.Errorf("watching cgroup %s: syscall probe not attached", path)
	}
	if _, err := watchCgroupPath(path, " for syscalls", s.probe.WatchCgroup, bpf.ErrSyscallWatchFull, &s.cgroupsOverflow); err != nil {
		return err
	}
	s.watched++
	s.setSource()
	return nil
}

func (s *syscallSource) sample(now time.Time) {
	if s.probe == nil {
		return
	}
	if err := s.probe.Read(&s.cum); err == nil {
		s.win.Push(now, &s.cum)
	}
	if n, err := s.probe.Untimed(); err == nil {
		s.untimed = n
	}
}

func (s *syscallSource) fill(out *SyscallSignal) {
	out.Source = s.src
	out.Watched = s.watched
	out.PIDsOverflow, out.CgroupsOverflow, out.Untimed = s.pidsOverflow, s.cgroupsOverflow, s.untimed
	if s.probe == nil || s.watched == 0 {
		out.Latency = unknownLatency
		return
	}
	out.Latency = s.win.Latency()
}

func (s *syscallSource) close() {
	if s.probe != nil {
		s.probe.Close()
	}
}
