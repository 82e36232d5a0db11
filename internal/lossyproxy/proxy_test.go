package lossyproxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer answers every datagram with the same bytes and counts them.
type echoServer struct {
	conn     *net.UDPConn
	received atomic.Uint64
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{conn: conn}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 70<<10)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			s.received.Add(1)
			conn.WriteToUDP(buf[:n], from)
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return s
}

func startProxy(t *testing.T, cfg Config) *Proxy {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dialProxy(t *testing.T, p *Proxy) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// exchange sends n numbered datagrams one at a time (each is read by the
// proxy before the next leaves, so no socket buffer overflows), collects the
// echoes, and returns which sequence numbers came back.
func exchange(t *testing.T, p *Proxy, c *net.UDPConn, n int) map[uint32]bool {
	t.Helper()
	got := map[uint32]bool{}
	recvDone := make(chan struct{})
	var corrupt atomic.Bool
	go func() {
		defer close(recvDone)
		buf := make([]byte, 2048)
		for {
			c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			k, err := c.Read(buf)
			if err != nil {
				return
			}
			if k != 64 || !bytes.Equal(buf[4:k], bytes.Repeat([]byte{buf[0]}, k-4)) {
				corrupt.Store(true)
			}
			got[binary.LittleEndian.Uint32(buf)] = true
		}
	}()
	before := p.Stats().ClientToServer.Packets
	msg := make([]byte, 64)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(msg, uint32(i))
		for j := 4; j < len(msg); j++ {
			msg[j] = byte(i)
		}
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("the proxy to read datagram %d", i), func() bool {
			return p.Stats().ClientToServer.Packets == before+uint64(i)+1
		})
	}
	<-recvDone
	if corrupt.Load() {
		t.Fatal("an echo came back with other bytes than were sent")
	}
	return got
}

func TestForwardsBothWays(t *testing.T) {
	srv := startEcho(t)
	p := startProxy(t, Config{Server: srv.conn.LocalAddr().String()})
	c := dialProxy(t, p)
	got := exchange(t, p, c, 200)
	if len(got) != 200 {
		t.Fatalf("%d of 200 echoes came back without loss configured", len(got))
	}
	st := p.Stats()
	if st.ClientToServer.Forwarded != 200 || st.ServerToClient.Forwarded != 200 || st.ClientToServer.Bytes != 200*64 || st.Sessions != 1 {
		t.Errorf("stats %+v", st)
	}
}

// binomialOK: k drops of n at rate q are within 5 standard deviations.
func binomialOK(k, n uint64, q float64) bool {
	sd := math.Sqrt(float64(n) * q * (1 - q))
	return math.Abs(float64(k)-float64(n)*q) <= 5*sd+1
}

func TestDropsTheConfiguredFraction(t *testing.T) {
	for _, tc := range []struct{ up, down float64 }{{0.3, 0.3}, {0.8, 0.8}, {0, 0.5}, {1, 0}} {
		t.Run(fmt.Sprintf("%.0f%%-%.0f%%", 100*tc.up, 100*tc.down), func(t *testing.T) {
			srv := startEcho(t)
			p := startProxy(t, Config{Server: srv.conn.LocalAddr().String(), DropClientToServer: tc.up, DropServerToClient: tc.down, Seed: 7})
			c := dialProxy(t, p)
			const n = 1500
			got := exchange(t, p, c, n)
			st := p.Stats()
			up, down := st.ClientToServer, st.ServerToClient
			// Every datagram is accounted for, in each direction.
			if up.Packets != n || up.Forwarded+up.Dropped+up.Errors != up.Packets || up.Errors != 0 {
				t.Errorf("client to server: %+v", up)
			}
			if srv.received.Load() != up.Forwarded {
				t.Errorf("server got %d, proxy forwarded %d", srv.received.Load(), up.Forwarded)
			}
			if down.Packets != up.Forwarded || down.Forwarded+down.Dropped != down.Packets {
				t.Errorf("server to client: %+v after %d forwarded up", down, up.Forwarded)
			}
			if uint64(len(got)) != down.Forwarded {
				t.Errorf("client got %d echoes, proxy forwarded %d", len(got), down.Forwarded)
			}
			if !binomialOK(up.Dropped, up.Packets, tc.up) || !binomialOK(down.Dropped, down.Packets, tc.down) {
				t.Errorf("dropped %d of %d up (want %.0f%%) and %d of %d down (want %.0f%%)",
					up.Dropped, up.Packets, 100*tc.up, down.Dropped, down.Packets, 100*tc.down)
			}
			t.Logf("up %d/%d dropped, down %d/%d dropped, %d echoes", up.Dropped, up.Packets, down.Dropped, down.Packets, len(got))
		})
	}
}

func TestSeedReproducesTheDrops(t *testing.T) {
	run := func(seed uint64) map[uint32]bool {
		srv := startEcho(t)
		p := startProxy(t, Config{Server: srv.conn.LocalAddr().String(), DropClientToServer: 0.5, Seed: seed})
		return exchange(t, p, dialProxy(t, p), 300)
	}
	a, b, c := run(42), run(42), run(43)
	same := func(x, y map[uint32]bool) bool {
		if len(x) != len(y) {
			return false
		}
		for k := range x {
			if !y[k] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("the same seed dropped different datagrams")
	}
	if same(a, c) {
		t.Error("different seeds dropped the same datagrams")
	}
}

func TestClientsHaveTheirOwnSessions(t *testing.T) {
	srv := startEcho(t)
	p := startProxy(t, Config{Server: srv.conn.LocalAddr().String()})
	c1, c2 := dialProxy(t, p), dialProxy(t, p)
	for i, c := range []*net.UDPConn{c1, c2} {
		if _, err := c.Write([]byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []*net.UDPConn{c1, c2} {
		buf := make([]byte, 8)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(buf)
		if err != nil || n != 1 || buf[0] != byte('a'+i) {
			t.Fatalf("client %d: %q, %v", i, buf[:n], err)
		}
	}
	if s := p.Stats().Sessions; s != 2 {
		t.Errorf("%d sessions, want 2", s)
	}
}

func TestSessionLimitAndIdleReaping(t *testing.T) {
	srv := startEcho(t)
	p := startProxy(t, Config{Server: srv.conn.LocalAddr().String(), MaxSessions: 1, IdleTimeout: 50 * time.Millisecond})
	c1, c2 := dialProxy(t, p), dialProxy(t, p)
	c1.Write([]byte("x"))
	waitFor(t, "the first session", func() bool { return p.Stats().Sessions == 1 })
	c2.Write([]byte("y"))
	waitFor(t, "the refused second client", func() bool { return p.Stats().ClientToServer.Errors == 1 })
	waitFor(t, "the idle session to be reaped", func() bool { return p.Stats().Sessions == 0 })
	c2.Write([]byte("z"))
	waitFor(t, "the second client's session", func() bool { return p.Stats().Sessions == 1 })
}

func TestSetDropAndConfigErrors(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("no server: %v, want ErrBadConfig", err)
	}
	for _, d := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := New(Config{Server: "127.0.0.1:1", DropServerToClient: d}); !errors.Is(err, ErrBadConfig) {
			t.Errorf("drop %v: %v, want ErrBadConfig", d, err)
		}
	}
	srv := startEcho(t)
	p := startProxy(t, Config{Server: srv.conn.LocalAddr().String()})
	if err := p.SetDrop(2, 0); !errors.Is(err, ErrBadConfig) {
		t.Errorf("SetDrop(2, 0): %v, want ErrBadConfig", err)
	}
	if err := p.SetDrop(1, 0); err != nil {
		t.Fatal(err)
	}
	if got := exchange(t, p, dialProxy(t, p), 50); len(got) != 0 {
		t.Errorf("%d echoes with everything dropped", len(got))
	}
}

func TestCloseStopsForwarding(t *testing.T) {
	srv := startEcho(t)
	p, err := New(Config{Server: srv.conn.LocalAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	c := dialProxy(t, p)
	exchange(t, p, c, 5)
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	before := srv.received.Load()
	c.Write([]byte("after close"))
	time.Sleep(50 * time.Millisecond)
	if srv.received.Load() != before {
		t.Error("a datagram sent after Close reached the server")
	}
}
