package signals

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/triage-agent/triage/bpf"
)

// maxSchedstatTasks bounds the threads read per sample on the procfs path.
const maxSchedstatTasks = 4096

// runqSource feeds RunQueueSignal from the runqlat probe, else from the
// schedstat of the watched pids (the agent itself by default).
type runqSource struct {
	src     Source
	status  ProbeStatus
	probe   *bpf.Runqlat
	win     *Window
	cum     bpf.Hist
	cgroups []cgroupWatch
	pids    []int
	sched   *counterWindow // [0] wait ns, [1] timeslices
	pf      procFile
	psi     Num
	slow    throttle

	// overflow counts the watches refused because the per-cgroup map was full.
	overflow int
}

type cgroupWatch struct {
	path string
	id   uint64
	win  *Window
	cum  bpf.Hist
}

func newRunqSource(cfg *Config, bpfErr error) *runqSource {
	s := &runqSource{
		status: ProbeStatus{Name: "runqlat"},
		win:    NewWindow(cfg.Window, cfg.Interval),
		sched:  newCounterWindow(cfg.Window, cfg.slowInterval()),
		pids:   cfg.WatchPIDs,
		psi:    unknown,
		slow:   throttle{every: cfg.slowInterval()},
	}
	if len(s.pids) == 0 {
		s.pids = []int{os.Getpid()}
	}
	probe, err := openProbe(&s.status, bpfErr, func() (*bpf.Runqlat, error) {
		return bpf.OpenRunqlat(bpf.RunqlatOptions{Tier: cfg.Tier, SampleEvery: cfg.RunqSampleEvery})
	})
	if err != nil {
		s.src = fallbackSource(SourceProcfs, err, "mean wait per timeslice from /proc/PID/schedstat of watched pids")
		return s
	}
	s.probe = probe
	s.src = Source{Kind: SourceEBPF}
	for _, p := range cfg.WatchCgroups {
		if err := s.watchCgroup(p, cfg); err != nil {
			s.status.Reason = err.Error()
		}
	}
	return s
}

func (s *runqSource) watchCgroup(path string, cfg *Config) error {
	if s.probe == nil {
		return fmt.Errorf("watching cgroup %s: run-queue probe not attached", path)
	}
	id, err := watchCgroupPath(path, "", s.probe.WatchCgroup, bpf.ErrCgroupMapFull, &s.overflow)
	if err != nil {
		return err
	}
	s.cgroups = append(s.cgroups, cgroupWatch{path: path, id: id, win: NewWindow(cfg.Window, cfg.Interval)})
	return nil
}

func (s *runqSource) sample(now time.Time) {
	slow := s.slow.due(now)
	if slow {
		if b, err := s.pf.read("/proc/pressure/cpu"); err == nil {
			if v, err := parsePressureSomeAvg10(b); err == nil {
				s.psi = Num(v)
			}
		}
	}
	if s.probe != nil {
		if err := s.probe.Read(&s.cum); err == nil {
			s.win.Push(now, &s.cum)
		}
		for i := range s.cgroups {
			c := &s.cgroups[i]
			if err := s.probe.ReadCgroup(c.id, &c.cum); err == nil {
				c.win.Push(now, &c.cum)
			}
		}
		return
	}
	if !slow {
		return
	}
	var v [maxCounters]uint64
	read := 0
	for _, pid := range s.pids {
		tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
		if err != nil {
			continue
		}
		for _, t := range tasks {
			if read >= maxSchedstatTasks {
				break
			}
			b, err := s.pf.read(t)
			if err != nil {
				continue // thread exited
			}
			if _, wait, slices, err := parseSchedstat(b); err == nil {
				v[0] += wait
				v[1] += slices
				read++
			}
		}
	}
	if read > 0 {
		s.sched.push(now, &v)
	}
}

func (s *runqSource) fill(out *RunQueueSignal) {
	out.Source = s.src
	out.Pressure = s.psi
	out.Cgroups = out.Cgroups[:0]
	out.CgroupsOverflow = s.overflow
	if s.probe != nil {
		out.Latency = s.win.Latency()
		for i := range s.cgroups {
			c := &s.cgroups[i]
			out.Cgroups = append(out.Cgroups, CgroupLatency{Path: c.path, ID: c.id, Latency: c.win.Latency()})
		}
		return
	}
	d, _, ok := s.sched.delta()
	if !ok || d[1] == 0 {
		out.Latency = unknownLatency
		return
	}
	mean := Num(float64(d[0]) / float64(d[1]) / 1e3)
	out.Latency = Latency{P50Us: mean, P99Us: mean, Count: d[1]}
}

func (s *runqSource) close() {
	if s.probe != nil {
		s.probe.Close()
	}
}
