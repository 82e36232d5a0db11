// Package lossyproxy is a UDP proxy for tests: it forwards datagrams between
// clients and one server address and drops a configured fraction of them in
// each direction, with a seeded random source, so that QUIC's datagram mode
// and the delta codec's ack mode can be tested under heavy, reproducible loss
// on loopback.
package lossyproxy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero values of Config.
const (
	DefaultListen      = "127.0.0.1:0"
	DefaultMaxPacket   = 64 << 10
	DefaultMaxSessions = 64
	DefaultIdleTimeout = time.Minute
)

// ErrBadConfig reports an unusable Config.
var ErrBadConfig = errors.New("lossyproxy: invalid config")

// Config describes a proxy. Its zero value, apart from Server, means the
// defaults: listen on a free loopback port, drop nothing.
type Config struct {
	Listen string // address to listen on (default 127.0.0.1:0)
	Server string // address datagrams are forwarded to (required)
	// Fractions of datagrams dropped, 0..1, client to server and back.
	DropClientToServer float64
	DropServerToClient float64
	Seed               uint64        // seeds the drop decisions
	MaxPacket          int           // largest datagram forwarded (default 64 KiB)
	MaxSessions        int           // client addresses served at once (default 64)
	IdleTimeout        time.Duration // a client silent this long loses its session (default 1 min)
}

// Direction counts one direction of traffic.
type Direction struct {
	Packets   uint64 // datagrams received by the proxy
	Forwarded uint64
	Dropped   uint64 // dropped on purpose
	Bytes     uint64 // bytes forwarded
	Errors    uint64 // datagrams lost to a failed write or a session refused
}

// Stats is a snapshot of the proxy's counters.
type Stats struct {
	ClientToServer, ServerToClient Direction
	Sessions                       int
}

// Proxy forwards datagrams; create it with New and stop it with Close.
type Proxy struct {
	cfg    Config
	server *net.UDPAddr
	conn   *net.UDPConn

	mu       sync.Mutex
	rng      *rand.Rand // guarded by mu: both directions draw from it
	drop     [2]float64 // guarded by mu; index c2s, s2c
	sessions map[string]*session

	c2s, s2c counters
	closed   chan struct{}
	wg       sync.WaitGroup
}

const (
	c2s = 0
	s2c = 1
)

type counters struct{ packets, forwarded, dropped, bytes, errors atomic.Uint64 }

func (c *counters) snapshot() Direction {
	return Direction{Packets: c.packets.Load(), Forwarded: c.forwarded.Load(), Dropped: c.dropped.Load(), Bytes: c.bytes.Load(), Errors: c.errors.Load()}
}

// session is one client address and the socket that speaks for it to the
// server, so that the server's answers find their way back.
type session struct {
	client   *net.UDPAddr
	upstream *net.UDPConn
	lastSeen atomic.Int64 // unix nanoseconds
}

// New starts a proxy listening on cfg.Listen.
func New(cfg Config) (*Proxy, error) {
	if cfg.Server == "" {
		return nil, fmt.Errorf("%w: no server address", ErrBadConfig)
	}
	for _, d := range []float64{cfg.DropClientToServer, cfg.DropServerToClient} {
		if !(d >= 0 && d <= 1) {
			return nil, fmt.Errorf("%w: drop fraction %v not in [0, 1]", ErrBadConfig, d)
		}
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.MaxPacket <= 0 {
		cfg.MaxPacket = DefaultMaxPacket
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	server, err := net.ResolveUDPAddr("udp", cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("resolving server %q: %w", cfg.Server, err)
	}
	laddr, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("resolving listen address %q: %w", cfg.Listen, err)
	}
	conn, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	p := &Proxy{
		cfg:      cfg,
		server:   server,
		conn:     conn,
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		drop:     [2]float64{cfg.DropClientToServer, cfg.DropServerToClient},
		sessions: map[string]*session{},
		closed:   make(chan struct{}),
	}
	p.wg.Add(2)
	go p.readClients()
	go p.reapIdle()
	return p, nil
}

// Addr is the address clients send to.
func (p *Proxy) Addr() *net.UDPAddr { return p.conn.LocalAddr().(*net.UDPAddr) }

// SetDrop changes the drop fractions while running (a test can let a
// handshake through, then turn the loss on).
func (p *Proxy) SetDrop(clientToServer, serverToClient float64) error {
	for _, d := range []float64{clientToServer, serverToClient} {
		if !(d >= 0 && d <= 1) {
			return fmt.Errorf("%w: drop fraction %v not in [0, 1]", ErrBadConfig, d)
		}
	}
	p.mu.Lock()
	p.drop = [2]float64{clientToServer, serverToClient}
	p.mu.Unlock()
	return nil
}

// Stats returns the counters so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	n := len(p.sessions)
	p.mu.Unlock()
	return Stats{ClientToServer: p.c2s.snapshot(), ServerToClient: p.s2c.snapshot(), Sessions: n}
}

// Close stops the proxy and waits for its goroutines. It is safe to call
// more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	select {
	case <-p.closed:
		p.mu.Unlock()
		return nil
	default:
	}
	close(p.closed)
	err := p.conn.Close()
	for k, s := range p.sessions {
		s.upstream.Close()
		delete(p.sessions, k)
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// shouldDrop draws the fate of one datagram in direction dir.
func (p *Proxy) shouldDrop(dir int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.drop[dir]
	return d > 0 && p.rng.Float64() < d
}

func (p *Proxy) readClients() {
	defer p.wg.Done()
	buf := make([]byte, p.cfg.MaxPacket+1)
	for {
		n, from, err := p.conn.ReadFromUDP(buf)
		if err != nil {
			if p.isClosed() {
				return
			}
			p.c2s.errors.Add(1)
			continue
		}
		p.c2s.packets.Add(1)
		if n > p.cfg.MaxPacket {
			p.c2s.errors.Add(1) // truncated: too large to forward faithfully
			continue
		}
		s, err := p.sessionFor(from)
		if err != nil {
			p.c2s.errors.Add(1)
			continue
		}
		s.lastSeen.Store(time.Now().UnixNano())
		if p.shouldDrop(c2s) {
			p.c2s.dropped.Add(1)
			continue
		}
		if _, err := s.upstream.Write(buf[:n]); err != nil {
			p.c2s.errors.Add(1)
			continue
		}
		p.c2s.forwarded.Add(1)
		p.c2s.bytes.Add(uint64(n))
	}
}

// sessionFor returns the session of a client address, opening one (and its
// goroutine for the answers) on the first datagram.
func (p *Proxy) sessionFor(client *net.UDPAddr) (*session, error) {
	key := client.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.sessions[key]; ok {
		return s, nil
	}
	if p.isClosed() {
		return nil, net.ErrClosed
	}
	if len(p.sessions) >= p.cfg.MaxSessions {
		return nil, fmt.Errorf("session limit %d reached", p.cfg.MaxSessions)
	}
	up, err := net.DialUDP("udp", nil, p.server)
	if err != nil {
		return nil, fmt.Errorf("dialing server %s: %w", p.server, err)
	}
	s := &session{client: client, upstream: up}
	s.lastSeen.Store(time.Now().UnixNano()) // before the reaper can see it
	p.sessions[key] = s
	p.wg.Add(1)
	go p.readServer(s)
	return s, nil
}

func (p *Proxy) readServer(s *session) {
	defer p.wg.Done()
	buf := make([]byte, p.cfg.MaxPacket+1)
	for {
		n, err := s.upstream.Read(buf)
		if err != nil {
			if p.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			p.s2c.errors.Add(1) // e.g. ICMP port unreachable while the server is down
			continue
		}
		p.s2c.packets.Add(1)
		if n > p.cfg.MaxPacket {
			p.s2c.errors.Add(1)
			continue
		}
		if p.shouldDrop(s2c) {
			p.s2c.dropped.Add(1)
			continue
		}
		if _, err := p.conn.WriteToUDP(buf[:n], s.client); err != nil {
			p.s2c.errors.Add(1)
			continue
		}
		p.s2c.forwarded.Add(1)
		p.s2c.bytes.Add(uint64(n))
	}
}

// reapIdle closes sessions whose client has been silent for IdleTimeout, so a
// long test with many short-lived clients keeps a bounded number of sockets.
func (p *Proxy) reapIdle() {
	defer p.wg.Done()
	tick := time.NewTicker(max(p.cfg.IdleTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-p.closed:
			return
		case now := <-tick.C:
			p.mu.Lock()
			for k, s := range p.sessions {
				if now.UnixNano()-s.lastSeen.Load() > int64(p.cfg.IdleTimeout) {
					s.upstream.Close()
					delete(p.sessions, k)
				}
			}
			p.mu.Unlock()
		}
	}
}

func (p *Proxy) isClosed() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}
