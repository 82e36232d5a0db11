package bpf

import "fmt"

// TCPStatOptions configure OpenTCPStat; the zero value means auto tier.
type TCPStatOptions struct {
	Tier Tier
}

// TCPCounters are cumulative node-wide TCP event counts (struct
// tcpstat_counters in tcpstat.bpf.c).
type TCPCounters struct {
	Retransmits  uint64 // tcp:tcp_retransmit_skb
	StateChanges uint64 // sock:inet_sock_set_state for TCP sockets
	Established  uint64 // ... whose new state is ESTABLISHED
	Closed       uint64 // ... whose new state is CLOSE
}

var tcpstatHooks = []hook{
	{group: "tcp", name: "tcp_retransmit_skb", btf: "tcpstat_btf_retransmit", raw: "tcpstat_raw_retransmit", tp: "tcpstat_tp_retransmit"},
	{group: "sock", name: "inet_sock_set_state", btf: "tcpstat_btf_state", raw: "tcpstat_raw_state", tp: "tcpstat_tp_state"},
}

// TCPStat counts TCP retransmits and socket state changes.
type TCPStat struct {
	*probe
	buf []TCPCounters
}

// OpenTCPStat loads and attaches the TCP counter programs.
func OpenTCPStat(opts TCPStatOptions) (*TCPStat, error) {
	p, buf, err := openPercpuProbe[TCPCounters]("tcpstat", loadTcpstat, tcpstatHooks, opts.Tier)
	if err != nil {
		return nil, err
	}
	return &TCPStat{probe: p, buf: buf}, nil
}

// Read sums the per-CPU counters.
func (t *TCPStat) Read() (TCPCounters, error) {
	var c TCPCounters
	if err := t.mapNamed("tcpstat_counters").Lookup(uint32(0), &t.buf); err != nil {
		return c, fmt.Errorf("reading TCP counters: %w", err)
	}
	for _, v := range t.buf {
		c.Retransmits += v.Retransmits
		c.StateChanges += v.StateChanges
		c.Established += v.Established
		c.Closed += v.Closed
	}
	return c, nil
}
