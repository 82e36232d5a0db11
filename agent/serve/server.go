package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/triage-agent/triage/codec"
	"github.com/triage-agent/triage/wire"
)

// Server is a running endpoint. Create it with New (which binds the UDP
// and TCP ports), run it with Serve, stop it with Close.
type Server struct {
	cfg     Config
	backend Backend
	certs   *certStore
	metrics *endpointMetrics
	// callEncoders encode the answers of every native stream (full frames).
	callEncoders *wire.EncoderPool

	udp *net.UDPConn
	tr  *quic.Transport
	ln  *quic.Listener
	h3  *http3.Server
	tcp *tcpSide // nil when DisableTCP

	mu     sync.Mutex
	conns  map[*quic.Conn]struct{}
	nConns int            // QUIC and TCP connections admitted and not yet released
	perIP  map[string]int // the same, per client IP
	closed bool

	// fullAt is when each address last found all of its MaxConnsPerIP
	// taken (under mu; only addresses at the limit have an entry).
	fullAt   map[string]time.Time
	rate     *connRate // new connections per client IP
	refusals refusalLog

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	stats Stats
}

// Stats counts what the endpoint did, for /metrics and for tests.
type Stats struct {
	Conns          atomic.Int64 // connections accepted (QUIC, both ALPNs, and TCP)
	RejectedConns  atomic.Int64 // connections closed at once: limits or authentication
	StreamErrors   atomic.Int64 // native streams closed with an error code
	Requests       atomic.Int64 // decide requests served (every protocol)
	Decisions      atomic.Int64 // decisions returned
	DatagramsSent  atomic.Int64 // node-state datagrams sent
	DatagramsAcked atomic.Int64 // acknowledgements received by datagram or stream
	// PayloadBytes and WireBytes total what the agent wrote on native
	// streams and datagrams: protobuf payloads before the codec, and frames
	// as sent (headers and length prefixes included). Their ratio is the
	// codec's saving.
	PayloadBytes atomic.Int64
	WireBytes    atomic.Int64
}

func (st *Stats) countFrame(payload, wire int) {
	st.PayloadBytes.Add(int64(payload))
	st.WireBytes.Add(int64(wire))
}

// New validates cfg, loads or makes the certificate, binds the UDP address
// (and the TCP one) and prepares the listeners; it does not accept
// connections until Serve.
func New(cfg Config, backend Backend) (*Server, error) {
	if backend == nil {
		return nil, fmt.Errorf("%w: nil backend", ErrBadConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, backend: backend, conns: map[*quic.Conn]struct{}{}, perIP: map[string]int{}, fullAt: map[string]time.Time{}, metrics: newEndpointMetrics(),
		rate: newConnRate(cfg.MaxNewConnsPerIP), refusals: refusalLog{log: cfg.Logger}}
	if s.certs, err = newCertStore(&s.cfg); err != nil {
		return nil, err
	}
	if s.callEncoders, err = wire.NewEncoderPool(append(wire.CallOptions(), codec.WithMaxSize(cfg.MaxFrameBytes))...); err != nil {
		return nil, err
	}
	uaddr, err := net.ResolveUDPAddr("udp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("resolving %q: %w", cfg.Addr, err)
	}
	if s.udp, err = net.ListenUDP("udp", uaddr); err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	s.tr = &quic.Transport{Conn: s.udp}
	if s.ln, err = s.tr.Listen(s.certs.serverConfig([]string{wire.ALPNNative, wire.ALPNHTTP3}, s.clientAuth()), s.quicConfig()); err != nil {
		s.udp.Close()
		return nil, fmt.Errorf("starting QUIC listener: %w", err)
	}
	if !cfg.DisableTCP {
		if err := s.listenTCP(); err != nil {
			s.ln.Close()
			s.udp.Close()
			return nil, err
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.h3 = &http3.Server{Handler: s.httpHandler(), Logger: cfg.Logger, MaxHeaderBytes: 16 << 10}
	return s, nil
}

// clientAuth is what TLS asks of clients when a client CA is configured.
func (s *Server) clientAuth() tls.ClientAuthType { return tls.RequireAndVerifyClientCert }

// TLSConfig is a TLS 1.3 server configuration with the endpoint's identity
// in force at each handshake (reloaded files included), for the given ALPNs;
// with a client CA configured, client certificates are asked for with
// clientAuth. The agent's admin port uses it when it serves TLS.
func (s *Server) TLSConfig(alpns []string, clientAuth tls.ClientAuthType) *tls.Config {
	return s.certs.serverConfig(alpns, clientAuth)
}

func (s *Server) quicConfig() *quic.Config {
	qc := &quic.Config{
		MaxIdleTimeout:        s.cfg.IdleTimeout,
		MaxIncomingStreams:    s.cfg.MaxStreamsPerConn,
		MaxIncomingUniStreams: 16, // HTTP/3 control and QPACK streams
		EnableDatagrams:       true,
		KeepAlivePeriod:       0,
	}
	// Called on a new connection's first packet, before any handshake work.
	qc.GetConfigForClient = func(info *quic.ClientInfo) (*quic.Config, error) {
		if !s.allowNew(info.RemoteAddr, "QUIC") {
			return nil, errRateLimited
		}
		if now := time.Now(); s.fullRecently(remoteIP(info.RemoteAddr), now) {
			s.stats.RejectedConns.Add(1)
			s.refusals.warn(now, "refusing QUIC connection", "remote", info.RemoteAddr.String(),
				"reason", fmt.Sprintf("connection limit %d per client address reached", s.cfg.MaxConnsPerIP))
			return nil, errRateLimited
		}
		return qc, nil
	}
	return qc
}

var errRateLimited = errors.New("serve: too many connections from this address")

// allowNew takes a new connection from addr out of its address's budget
// (MaxNewConnsPerIP), or counts and logs its refusal.
func (s *Server) allowNew(addr net.Addr, transport string) bool {
	now := time.Now()
	if s.rate.allow(remoteIP(addr), now) {
		return true
	}
	s.stats.RejectedConns.Add(1)
	s.refusals.warn(now, "refusing "+transport+" connection", "remote", addr.String(),
		"reason", fmt.Sprintf("more than %d new connections a second from this address", s.cfg.MaxNewConnsPerIP))
	return false
}

// Addr is the bound UDP address (useful with port 0).
func (s *Server) Addr() net.Addr { return s.udp.LocalAddr() }

// TCPAddr is the bound TCP address, nil when the TCP side is off.
func (s *Server) TCPAddr() net.Addr {
	if s.tcp == nil {
		return nil
	}
	return s.tcp.ln.Addr()
}

// Fingerprint is the hex SHA-256 of the server certificate in force, for
// pinning.
func (s *Server) Fingerprint() string { return s.certs.current().fp }

// Certificate is the server certificate in force (self-signed unless
// configured).
func (s *Server) Certificate() tls.Certificate { return *s.certs.current().cert }

// Stats returns the live counters.
func (s *Server) Stats() *Stats { return &s.stats }

// QUICBytes is the UDP payload bytes sent and received so far on the QUIC
// connections open now (both ALPNs; QUIC headers, acknowledgements and
// retransmissions included, as quic-go counts them). A benchmark takes it
// before and after a run to learn the bytes on the wire without wrapping
// the client's socket, which would cost quic-go its batched syscalls and
// its socket buffer sizes.
func (s *Server) QUICBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n uint64
	for c := range s.conns {
		st := c.ConnectionStats()
		n += st.BytesSent + st.BytesReceived
	}
	return int64(n)
}

// Serve accepts connections on both ports until Close (then it returns
// ErrClosed) or until a listener fails.
func (s *Server) Serve() error {
	errc := make(chan error, 2)
	if s.tcp != nil {
		go func() { errc <- s.serveTCP() }()
	}
	go func() { errc <- s.serveQUIC() }()
	return <-errc
}

func (s *Server) serveQUIC() error {
	for {
		conn, err := s.ln.Accept(s.ctx)
		if err != nil {
			if s.ctx.Err() != nil {
				return ErrClosed
			}
			return fmt.Errorf("accepting QUIC connection: %w", err)
		}
		if !s.admit(conn) {
			continue
		}
		s.stats.Conns.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.release(conn)
			switch proto := conn.ConnectionState().TLS.NegotiatedProtocol; proto {
			case wire.ALPNNative:
				s.serveNative(conn)
			case wire.ALPNHTTP3:
				_ = s.h3.ServeQUICConn(conn)
			default:
				conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeUnsupported), "unsupported ALPN "+proto)
			}
		}()
	}
}

// admitAddr counts a new connection from ip against the limits, or says
// why it is refused.
func (s *Server) admitAddr(ip string) (reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return "agent shutting down"
	case s.nConns >= s.cfg.MaxConns:
		return fmt.Sprintf("connection limit %d reached", s.cfg.MaxConns)
	case s.perIP[ip] >= s.cfg.MaxConnsPerIP:
		s.fullAt[ip] = time.Now()
		return fmt.Sprintf("connection limit %d per client address reached", s.cfg.MaxConnsPerIP)
	}
	s.nConns++
	s.perIP[ip]++
	return ""
}

// releaseAddr frees what admitAddr took.
func (s *Server) releaseAddr(ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nConns--
	if s.perIP[ip]--; s.perIP[ip] <= 0 {
		delete(s.perIP, ip)
	}
	delete(s.fullAt, ip)
}

// fullRecently reports whether ip has all of its MaxConnsPerIP connections
// open and was refused one more within the last second: a QUIC attempt
// from it is then refused before its handshake. The first refusal is made
// after the handshake, so that a client over the limit is told why
// (CodeTooManyConnections); an address that keeps trying within the
// second gets the cheap refusal.
func (s *Server) fullRecently(ip string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.fullAt[ip]
	return ok && s.perIP[ip] >= s.cfg.MaxConnsPerIP && now.Sub(at) < time.Second
}

// admit applies the connection limits to a QUIC connection; a refused one
// is closed with CodeTooManyConnections and a reason.
func (s *Server) admit(conn *quic.Conn) bool {
	if reason := s.admitAddr(remoteIP(conn.RemoteAddr())); reason != "" {
		s.stats.RejectedConns.Add(1)
		s.refusals.warn(time.Now(), "refusing QUIC connection", "remote", conn.RemoteAddr().String(), "reason", reason)
		conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeTooManyConnections), reason)
		return false
	}
	s.mu.Lock()
	s.conns[conn] = struct{}{}
	s.mu.Unlock()
	return true
}

func (s *Server) release(conn *quic.Conn) {
	s.mu.Lock()
	delete(s.conns, conn)
	s.mu.Unlock()
	s.releaseAddr(remoteIP(conn.RemoteAddr()))
}

func remoteIP(a net.Addr) string {
	switch u := a.(type) {
	case *net.UDPAddr:
		return u.IP.String()
	case *net.TCPAddr:
		return u.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// Close stops accepting, closes every QUIC connection with CodeShutdown and
// every TCP connection, and releases the ports. It waits for the QUIC
// connection handlers to return.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]*quic.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.cancel()
	for _, c := range conns {
		c.CloseWithError(quic.ApplicationErrorCode(wire.CodeShutdown), "agent shutting down")
	}
	err := s.ln.Close()
	s.h3.Close()
	if s.tcp != nil {
		s.tcp.http.Close()
		s.tcp.ln.Close() // Close above closes it only if Serve ran
		s.tcp.grpc.Stop()
	}
	s.wg.Wait()
	if cerr := s.tr.Close(); cerr != nil && err == nil && !errors.Is(cerr, net.ErrClosed) {
		err = cerr
	}
	s.udp.Close()
	return err
}
