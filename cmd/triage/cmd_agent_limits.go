package main

import (
	"flag"
	"fmt"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/agent/serve"
)

// connLimits are the flags of the endpoint's connection limits (QUIC and
// TCP counted together; docs/endpoint.md). Each flag's default is the
// endpoint's, and 0 means that default too, as in agent.Config; a negative
// value is refused, naming the flag, rather than read as the default.
type connLimits []connLimit

type connLimit struct {
	flag, usage string
	v           *int
	def         int
	most        int64 // the largest value allowed; 0 = no bound
}

// connLimitFlags binds the limit flags of `triage agent` to cfg.
func connLimitFlags(fs *flag.FlagSet, cfg *agent.Config) connLimits {
	limits := connLimits{
		{flag: "max-conns", v: &cfg.MaxConns, def: serve.DefaultMaxConns,
			usage: "most connections open at once, QUIC and TCP together (0 = the default)"},
		{flag: "max-conns-per-addr", v: &cfg.MaxConnsPerIP, def: serve.DefaultMaxConnsPerIP,
			usage: "most connections open at once from one client address, QUIC and TCP together (0 = the default)"},
		{flag: "max-new-conns-per-addr", v: &cfg.MaxNewConnsPerIP, def: serve.DefaultMaxNewConnsPerIP,
			usage: "most new connections a second from one client address, in bursts of as many; more are refused before the TLS handshake (0 = the default)"},
		{flag: "max-streams-per-conn", v: &cfg.MaxStreamsPerConn, def: serve.DefaultMaxStreamsPerConn, most: serve.MaxStreamsPerConnLimit,
			usage: "most concurrent streams per connection, QUIC and HTTP/2 (gRPC included) (0 = the default)"},
	}
	for _, l := range limits {
		fs.IntVar(l.v, l.flag, l.def, l.usage)
	}
	return limits
}

// check refuses a negative limit, or one above its bound, naming its flag.
func (ls connLimits) check() error {
	for _, l := range ls {
		if *l.v < 0 {
			return fmt.Errorf("--%s %d: want 0 (the default, %d) or more", l.flag, *l.v, l.def)
		}
		if l.most > 0 && int64(*l.v) > l.most {
			return fmt.Errorf("--%s %d: at most %d", l.flag, *l.v, l.most)
		}
	}
	return nil
}
