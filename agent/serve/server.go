package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/triage-agent/triage/wire"
)

// Server is a running endpoint. Create it with New (which binds the UDP
// port), run it with Serve, stop it with Close.
type Server struct {
	cfg     Config
	backend Backend
	cert    tls.Certificate
	fp      string

	udp *net.UDPConn
	tr  *quic.Transport
	ln  *quic.Listener
	h3  *http3.Server

	mu     sync.Mutex
	conns  map[*quic.Conn]struct{}
	perIP  map[string]int
	closed bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	stats Stats
}

// Stats counts what the endpoint did, for /metrics and for tests.
type Stats struct {
	Conns          atomic.Int64 // connections accepted (both ALPNs)
	RejectedConns  atomic.Int64 // connections closed at once: limits or authentication
	StreamErrors   atomic.Int64 // native streams closed with an error code
	Requests       atomic.Int64 // decide requests served (native and HTTP/3)
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

// New validates cfg, binds its UDP address and prepares the listener; it
// does not accept connections until Serve.
func New(cfg Config, backend Backend) (*Server, error) {
	if backend == nil {
		return nil, fmt.Errorf("%w: nil backend", ErrBadConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, backend: backend, conns: map[*quic.Conn]struct{}{}, perIP: map[string]int{}}
	if cfg.Certificate != nil {
		s.cert = *cfg.Certificate
	} else {
		if s.cert, err = SelfSigned(); err != nil {
			return nil, fmt.Errorf("self-signed certificate: %w", err)
		}
	}
	if len(s.cert.Certificate) == 0 {
		return nil, fmt.Errorf("%w: certificate has no DER", ErrBadConfig)
	}
	s.fp = Fingerprint(s.cert.Certificate[0])

	uaddr, err := net.ResolveUDPAddr("udp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("resolving %q: %w", cfg.Addr, err)
	}
	if s.udp, err = net.ListenUDP("udp", uaddr); err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	s.tr = &quic.Transport{Conn: s.udp}
	if s.ln, err = s.tr.Listen(s.tlsConfig(), s.quicConfig()); err != nil {
		s.udp.Close()
		return nil, fmt.Errorf("starting QUIC listener: %w", err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.h3 = &http3.Server{Handler: s.httpHandler(), Logger: cfg.Logger, MaxHeaderBytes: 16 << 10}
	return s, nil
}

func (s *Server) quicConfig() *quic.Config {
	return &quic.Config{
		MaxIdleTimeout:        s.cfg.IdleTimeout,
		MaxIncomingStreams:    s.cfg.MaxStreamsPerConn,
		MaxIncomingUniStreams: 16, // HTTP/3 control and QPACK streams
		EnableDatagrams:       true,
		KeepAlivePeriod:       0,
	}
}

// Addr is the bound UDP address (useful with port 0).
func (s *Server) Addr() net.Addr { return s.udp.LocalAddr() }

// Fingerprint is the hex SHA-256 of the server certificate, for pinning.
func (s *Server) Fingerprint() string { return s.fp }

// Certificate is the server certificate (self-signed unless configured).
func (s *Server) Certificate() tls.Certificate { return s.cert }

// Stats returns the live counters.
func (s *Server) Stats() *Stats { return &s.stats }

// Serve accepts connections until Close (then it returns ErrClosed) or until
// the listener fails.
func (s *Server) Serve() error {
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

// admit applies the connection limits; a refused connection is closed with
// CodeTooManyConnections and a reason.
func (s *Server) admit(conn *quic.Conn) bool {
	ip := remoteIP(conn.RemoteAddr())
	s.mu.Lock()
	reason := ""
	switch {
	case s.closed:
		reason = "agent shutting down"
	case len(s.conns) >= s.cfg.MaxConns:
		reason = fmt.Sprintf("connection limit %d reached", s.cfg.MaxConns)
	case s.perIP[ip] >= s.cfg.MaxConnsPerIP:
		reason = fmt.Sprintf("connection limit %d per client address reached", s.cfg.MaxConnsPerIP)
	default:
		s.conns[conn] = struct{}{}
		s.perIP[ip]++
	}
	s.mu.Unlock()
	if reason != "" {
		s.stats.RejectedConns.Add(1)
		s.cfg.Logger.Warn("refusing QUIC connection", "remote", conn.RemoteAddr().String(), "reason", reason)
		conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeTooManyConnections), reason)
		return false
	}
	return true
}

func (s *Server) release(conn *quic.Conn) {
	ip := remoteIP(conn.RemoteAddr())
	s.mu.Lock()
	delete(s.conns, conn)
	if s.perIP[ip]--; s.perIP[ip] <= 0 {
		delete(s.perIP, ip)
	}
	s.mu.Unlock()
}

func remoteIP(a net.Addr) string {
	if u, ok := a.(*net.UDPAddr); ok {
		return u.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// Close stops accepting, closes every connection with CodeShutdown and
// releases the port. It waits for the connection handlers to return.
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
	s.wg.Wait()
	if cerr := s.tr.Close(); cerr != nil && err == nil && !errors.Is(cerr, net.ErrClosed) {
		err = cerr
	}
	s.udp.Close()
	return err
}
