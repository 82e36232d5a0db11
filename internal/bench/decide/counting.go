package decide

import (
	"net"
	"sync/atomic"
)

// byteCounter totals the bytes a client's sockets send and receive: UDP
// payloads for QUIC (every QUIC header, ACK and handshake byte included),
// TCP payloads for gRPC (TLS records, HTTP/2 frames, ACKs of TCP not).
type byteCounter struct{ n atomic.Int64 }

func (c *byteCounter) load() int64 { return c.n.Load() }

// countingPacketConn wraps the UDP socket under a quic.Transport. quic-go
// loses its batched-syscall fast path behind a wrapper; only the clients are
// wrapped, the server keeps the real socket.
type countingPacketConn struct {
	net.PacketConn
	c *byteCounter
}

func (p countingPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := p.PacketConn.ReadFrom(b)
	p.c.n.Add(int64(n))
	return n, a, err
}

func (p countingPacketConn) WriteTo(b []byte, a net.Addr) (int, error) {
	n, err := p.PacketConn.WriteTo(b, a)
	p.c.n.Add(int64(n))
	return n, err
}

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
