package serve

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// The TCP side of the endpoint: TLS 1.3 on the TCP port of the QUIC port's
// number, ALPN h2 or http/1.1. HTTP/2 requests with a gRPC Content-Type go
// to the gRPC server, every other request to the JSON handler that HTTP/3
// uses. Connections count against the same limits as QUIC connections
// (MaxConns, MaxConnsPerIP); HTTP/2 streams against MaxStreamsPerConn.

// tcpALPN are the protocols of the TCP port, preferred first.
var tcpALPN = []string{"h2", "http/1.1"}

type tcpSide struct {
	ln   net.Listener // the TCP listener (limits and TLS wrap it)
	http *http.Server
	grpc *grpc.Server
}

func (s *Server) listenTCP() error {
	ln, err := net.Listen("tcp", s.cfg.TCPAddr)
	if err != nil {
		return fmt.Errorf("listening on TCP %s: %w", s.cfg.TCPAddr, err)
	}
	g := s.newGRPC()
	api := s.httpHandler()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			g.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.cfg.HelloTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: int(s.cfg.MaxStreamsPerConn)},
		// Failed handshakes (scanners, wrong CA) are noise at info level.
		ErrorLog: slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	s.tcp = &tcpSide{ln: ln, http: hs, grpc: g}
	return nil
}

// serveTCP serves the TCP side until Close.
func (s *Server) serveTCP() error {
	limited := &limitListener{Listener: s.tcp.ln, s: s}
	tl := tls.NewListener(limited, s.certs.serverConfig(tcpALPN, s.clientAuth()))
	err := s.tcp.http.Serve(tl)
	if errors.Is(err, http.ErrServerClosed) {
		return ErrClosed
	}
	return err
}

// limitListener applies the endpoint's connection limits to TCP: a
// connection over them is closed at once (a TCP client sees a reset or EOF;
// the log and RejectedConns say why).
type limitListener struct {
	net.Listener
	s *Server
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if !l.s.allowNew(c.RemoteAddr(), "TCP") {
			c.Close()
			continue
		}
		ip := remoteIP(c.RemoteAddr())
		if reason := l.s.admitAddr(ip); reason != "" {
			l.s.stats.RejectedConns.Add(1)
			l.s.refusals.warn(time.Now(), "refusing TCP connection", "remote", c.RemoteAddr().String(), "reason", reason)
			c.Close()
			continue
		}
		l.s.stats.Conns.Add(1)
		return &limitedConn{Conn: c, release: func() { l.s.releaseAddr(ip) }}, nil
	}
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
