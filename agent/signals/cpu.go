package signals

import "time"

// cpuSource feeds CPUSignal from /proc/stat (busy / total jiffies over the
// window) and /proc/pressure/cpu. An eBPF CPU counter would only recount
// what the kernel already keeps, so procfs is the source here on purpose.
type cpuSource struct {
	win  *counterWindow // [0] busy, [1] total
	pf   procFile
	psi  Num
	err  error
	slow throttle
}

func newCPUSource(cfg *Config) *cpuSource {
	return &cpuSource{win: newCounterWindow(cfg.Window, cfg.slowInterval()), psi: unknown, slow: throttle{every: cfg.slowInterval()}}
}

func (s *cpuSource) sample(now time.Time) {
	if !s.slow.due(now) {
		return
	}
	b, err := s.pf.read("/proc/stat")
	if err == nil {
		var busy, total uint64
		if busy, total, err = parseProcStatCPU(b); err == nil {
			v := [maxCounters]uint64{busy, total}
			s.win.push(now, &v)
		}
	}
	s.err = err
	if b, err := s.pf.read("/proc/pressure/cpu"); err == nil {
		if v, err := parsePressureSomeAvg10(b); err == nil {
			s.psi = Num(v)
		}
	}
}

func (s *cpuSource) fill(out *CPUSignal) {
	out.Pressure = s.psi
	if s.err != nil {
		out.Source = Source{Kind: SourceNone, Reason: s.err.Error()}
		out.Util = unknown
		return
	}
	out.Source = Source{Kind: SourceProcfs, Reason: "/proc/stat"}
	d, _, ok := s.win.delta()
	if !ok || d[1] == 0 {
		out.Util = unknown
		return
	}
	out.Util = Num(float64(d[0]) / float64(d[1]))
}
