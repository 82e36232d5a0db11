package signals

import (
	"time"

	"github.com/triage-agent/triage/bpf"
)

// tcpSource feeds TCPSignal: retransmits and state changes from the
// tcpstat probe, segments sent from /proc/net/snmp (the denominator the
// kernel already counts); without eBPF, RetransSegs from /proc/net/snmp.
// ListenOverflows always comes from /proc/net/netstat.
type tcpSource struct {
	src    Source
	status ProbeStatus
	probe  *bpf.TCPStat
	win    *counterWindow // [0] retrans, [1] out segs, [2] state changes, [3] listen overflows
	pf     procFile
	snmp   [2]uint64
	ok     bool
	slow   throttle
}

func newTCPSource(cfg *Config, bpfErr error) *tcpSource {
	s := &tcpSource{status: ProbeStatus{Name: ProbeTCPStat}, win: newCounterWindow(cfg.Window, cfg.slowInterval()), slow: throttle{every: cfg.slowInterval()}}
	probe, err := openProbe(&s.status, bpfErr, func() (*bpf.TCPStat, error) { return bpf.OpenTCPStat(bpf.TCPStatOptions{Tier: cfg.Tier}) })
	if err != nil {
		s.src = fallbackSource(SourceProcfs, err, "RetransSegs/OutSegs from /proc/net/snmp")
		return s
	}
	s.probe = probe
	s.src = Source{Kind: SourceEBPF, Reason: "retransmits and state changes from eBPF; segments sent from /proc/net/snmp"}
	return s
}

var (
	snmpTCPCols    = []string{"OutSegs", "RetransSegs"}
	netstatExtCols = []string{"ListenOverflows"}
)

func (s *tcpSource) sample(now time.Time) {
	if !s.slow.due(now) {
		return
	}
	var v [maxCounters]uint64
	b, err := s.pf.read("/proc/net/snmp")
	if err == nil {
		err = parseSNMPPair(b, "Tcp:", snmpTCPCols, s.snmp[:])
	}
	if err != nil {
		s.ok = false
		return
	}
	v[1], v[0] = s.snmp[0], s.snmp[1]
	if s.probe != nil {
		c, err := s.probe.Read()
		if err != nil {
			s.ok = false
			return
		}
		v[0], v[2] = c.Retransmits, c.StateChanges
	}
	if b, err := s.pf.read("/proc/net/netstat"); err == nil {
		var lo [1]uint64
		if parseSNMPPair(b, "TcpExt:", netstatExtCols, lo[:]) == nil {
			v[3] = lo[0]
		}
	}
	s.win.push(now, &v)
	s.ok = true
}

func (s *tcpSource) fill(out *TCPSignal) {
	out.Source = s.src
	d, _, ok := s.win.delta()
	if !s.ok || !ok {
		*out = TCPSignal{Source: s.src, RetransFraction: unknown}
		if !s.ok {
			out.Source = Source{Kind: SourceNone, Reason: "/proc/net/snmp unreadable"}
		}
		return
	}
	out.Retransmits, out.OutSegs, out.StateChanges, out.ListenOverflows = d[0], d[1], d[2], d[3]
	switch {
	case d[1] > 0:
		out.RetransFraction = Num(float64(d[0]) / float64(d[1]))
	case d[0] > 0:
		out.RetransFraction = 1 // retransmitting, nothing new sent
	default:
		out.RetransFraction = 0
	}
}

func (s *tcpSource) close() {
	if s.probe != nil {
		s.probe.Close()
	}
}
