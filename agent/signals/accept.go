package signals

import (
	"fmt"
	"time"

	"github.com/triage-agent/triage/bpf"
)

// acceptSource feeds AcceptSignal from the iter/tcp probe; without eBPF
// from a sock_diag netlink dump of listeners (exact backlog and max, no
// privilege needed); and where netlink fails too, from the LISTEN rows of
// /proc/net/tcp{,6}, whose rx_queue is the accept backlog but which do not
// show the listen() backlog: that fill divides by Config.AcceptMaxBacklog
// or somaxconn, a lower bound of the real fill.
//
// Both the iterator and /proc/net/tcp walk every bucket of the TCP hash
// tables (about 1 ms on this machine), so the accept queue is read every
// Config.AcceptInterval (2 s) rather than every tick.
type acceptSource struct {
	src    Source
	status ProbeStatus
	probe  *bpf.Accept
	diag   *sockDiag
	slow   throttle
	ports  map[uint16]bool
	q      []bpf.ListenQueue
	max    uint32
	pf     procFile
	ls     []Listener
	fillv  Num
}

func newAcceptSource(cfg *Config, bpfErr error) *acceptSource {
	s := &acceptSource{status: ProbeStatus{Name: ProbeAccept}, ports: map[uint16]bool{}, fillv: unknown, slow: throttle{every: cfg.AcceptInterval}}
	for _, p := range cfg.WatchPorts {
		s.ports[p] = true
	}
	if err := bpfErr; err == nil {
		s.probe, err = bpf.OpenAccept(bpf.AcceptOptions{})
		if err == nil {
			err = s.configure()
		}
		bpfErr = err
	}
	if bpfErr == nil {
		s.status.Attached, s.status.Tier = true, bpf.TierIter.String()
		s.src = Source{Kind: SourceEBPF}
		return s
	}
	if s.probe != nil {
		s.probe.Close()
		s.probe = nil
	}
	s.status.Reason = bpfErr.Error()
	if !cfg.noSockDiag {
		d := newSockDiag()
		if err := d.listeners(func(uint16, uint32, uint32) {}); err == nil {
			s.diag = d
			s.src = fallbackSource(SourceNetlink, bpfErr, "backlog and max backlog of listeners from sock_diag")
			return s
		}
	}
	s.max = cfg.AcceptMaxBacklog
	what := fmt.Sprintf("configured max backlog %d", s.max)
	if s.max == 0 {
		if b, err := s.pf.read("/proc/sys/net/core/somaxconn"); err == nil {
			if v, ok := atou(trimNL(b)); ok && v > 0 {
				s.max = uint32(v)
			}
		}
		what = fmt.Sprintf("net.core.somaxconn=%d as the max backlog, so fill is a lower bound", s.max)
	}
	s.src = fallbackSource(SourceProcfs, bpfErr, "backlog from /proc/net/tcp rx_queue, "+what)
	return s
}

func (s *acceptSource) configure() error {
	if len(s.ports) == 0 {
		return s.probe.WatchAll(true)
	}
	for p := range s.ports {
		if err := s.probe.WatchPort(p); err != nil {
			return err
		}
	}
	return nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

func (s *acceptSource) sample(now time.Time) {
	if !s.slow.due(now) {
		return
	}
	s.ls = s.ls[:0]
	if s.diag != nil {
		err := s.diag.listeners(func(port uint16, backlog, max uint32) {
			if len(s.ports) == 0 || s.ports[port] {
				s.ls = append(s.ls, Listener{Port: port, Backlog: backlog, Max: max})
			}
		})
		if err != nil {
			s.fillv = unknown
			return
		}
	} else if s.probe != nil {
		q, err := s.probe.Read(s.q)
		s.q = q
		if err != nil {
			s.fillv = unknown
			return
		}
		for _, l := range q {
			s.ls = append(s.ls, Listener{Port: l.Port, Backlog: l.Backlog, Max: l.MaxBacklog})
		}
	} else {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, err := s.pf.read(f)
			if err != nil {
				continue
			}
			parseNetTCPListen(b, func(port uint16, backlog uint32) {
				if len(s.ports) == 0 || s.ports[port] {
					s.ls = append(s.ls, Listener{Port: port, Backlog: backlog, Max: s.max})
				}
			})
		}
	}
	s.fillv = maxFill(s.ls)
}

// maxFill is the fill of the fullest listener; a full queue can hold one
// more than max (the kernel's check is backlog > max), which reads as 1.
func maxFill(ls []Listener) Num {
	if len(ls) == 0 {
		return 0 // nothing listening: nothing queued
	}
	var m float64
	for _, l := range ls {
		var f float64
		switch {
		case l.Max > 0:
			f = float64(l.Backlog) / float64(l.Max)
		case l.Backlog > 0:
			f = 1 // listen(fd, 0): any queued connection fills it
		}
		if f > m {
			m = f
		}
	}
	if m > 1 {
		m = 1
	}
	return Num(m)
}

func (s *acceptSource) fill(out *AcceptSignal) {
	out.Source = s.src
	out.Fill = s.fillv
	out.Listeners = append(out.Listeners[:0], s.ls...)
}

func (s *acceptSource) close() {
	if s.probe != nil {
		s.probe.Close()
	}
}
