package decide

import (
	"net"
	"sync/atomic"
)

// byteCounter totals the bytes a TCP client's socket sends and receives:
// TCP payloads (TLS records, HTTP/2 frames; TCP's own ACKs not). The QUIC
// protocols' bytes are counted by the agent's end instead (env.quicBytes).
type byteCounter struct{ n atomic.Int64 }

func (c *byteCounter) load() int64 { return c.n.Load() }

type countingConn struct {
	net.Conn
	c *byteCounter
}

func (cc countingConn) Read(b []byte) (int, error) {
	n, err := cc.Conn.Read(b)
	cc.c.n.Add(int64(n))
	return n, err
}

func (cc countingConn) Write(b []byte) (int, error) {
	n, err := cc.Conn.Write(b)
	cc.c.n.Add(int64(n))
	return n, err
}
