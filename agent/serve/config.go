// Package serve is the agent's endpoint: on one UDP port, TLS 1.3 with ALPN
// triage/1 (the native protocol of package wire) and h3 (HTTP/3 with JSON);
// on the TCP port of the same number, TLS 1.3 with ALPN h2 (gRPC, and JSON
// over HTTP/2) and http/1.1 (JSON). Every transport goes through one call
// path (calls.go): the same limits, authentication and metrics. It takes
// its dependencies as a Backend, so the agent wires the policy and the node
// state in, and the tests can wire a plain Go MLP and a node state of their
// own.
package serve

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/triage-agent/triage/agent/access"
)

// Config is the endpoint's configuration. Its zero value is usable: it listens
// on 127.0.0.1:4433, UDP and TCP (loopback, because no client authentication
// is set), with a self-signed certificate and the limits below.
type Config struct {
	// Addr is the UDP address to listen on. Empty means ":4433" when client
	// authentication is configured or InsecureListenAny is set, else
	// "127.0.0.1:4433".
	Addr string
	// TCPAddr is the TCP address of gRPC and JSON over HTTP/1.1 and HTTP/2.
	// Empty means Addr's host and port number (a port 0 stays 0: any free
	// port, which Server.TCPAddr names). DisableTCP turns the listener off.
	TCPAddr    string
	DisableTCP bool

	// Certificate is the server certificate; nil generates a self-signed
	// ECDSA P-256 one in memory (see Server.Fingerprint) for localhost, the
	// loopback addresses, the host name and CertHosts.
	Certificate *tls.Certificate
	CertHosts   []string
	// CertFile and KeyFile, when set, replace Certificate: a PEM chain and
	// key read at start and again before any new handshake that finds
	// either file changed (a failed reload keeps the pair in force).
	CertFile, KeyFile string
	// ClientCAs, when set, requires every client to present a certificate
	// signed by one of them (mutual TLS). ClientCAFile is the same from a
	// PEM bundle, reloaded like CertFile.
	ClientCAs    *x509.CertPool
	ClientCAFile string
	// OnTLSReload, when set, is told the outcome of every reload of the
	// files above (nil: the new identity is in force).
	OnTLSReload func(error)
	// Tokens, when not empty, are the accepted bearer tokens: HTTP requests
	// carry "Authorization: Bearer <token>", gRPC the same metadata, native
	// connections send it in Hello. TokenFile adds the tokens of a file,
	// re-read when it changes (access.Tokens). Auth, when set, replaces
	// both (the agent shares one set with its admin port).
	Tokens    []string
	TokenFile string
	Auth      *access.Tokens
	// InsecureListenAny allows a non-loopback Addr or TCPAddr without
	// client authentication. Without it such a Config is refused
	// (ErrInsecureListen).
	InsecureListenAny bool

	MaxFrameBytes        int           // largest native frame and decoded payload; default 1 MiB
	MaxBatch             int           // most tasks (or outcomes) per request; default 1024
	MaxStreamsPerConn    int64         // concurrent bidirectional streams per connection (QUIC and HTTP/2); default 64, at most MaxStreamsPerConnLimit
	MaxConns             int           // concurrent connections in all, UDP and TCP; default 1024
	MaxConnsPerIP        int           // concurrent connections per client IP, UDP and TCP; default 64
	MaxNewConnsPerIP     int           // new connections a second per client IP, UDP and TCP, in bursts of as many; default 100 (ratelimit.go)
	IdleTimeout          time.Duration // QUIC and TCP idle timeout; default 30s
	HelloTimeout         time.Duration // time for a native client to send Hello, or an HTTP client its headers; default 5s
	MaxHTTPBodyBytes     int64         // largest HTTP request body; default 1 MiB
	StateInterval        time.Duration // how often subscriptions look for a new snapshot; default 20ms
	MinSubscribeInterval time.Duration // fastest push a client may ask for; default 5ms

	// Logger receives one line per rejected client or stream; nil uses slog.Default().
	Logger *slog.Logger
}

// DefaultPort is the agent's QUIC port.
const DefaultPort = "4433"

// Defaults of the connection limits of Config (docs/endpoint.md).
const (
	DefaultMaxConns          = 1024
	DefaultMaxConnsPerIP     = 64
	DefaultMaxStreamsPerConn = 64
)

// MaxStreamsPerConnLimit bounds Config.MaxStreamsPerConn: HTTP/2 and gRPC
// take the limit as a uint32, so a larger value would wrap to a small or
// zero one.
const MaxStreamsPerConnLimit = math.MaxUint32

// DefaultMaxNewConnsPerIP is the default of Config.MaxNewConnsPerIP: above
// a client that reconnects all of its MaxConnsPerIP connections at once
// (an agent restart) and a pool that churns tens of connections a second,
// and a tenth of a 1,000-a-second flood.
const DefaultMaxNewConnsPerIP = 100

// Errors of Config validation and of the server.
var (
	ErrInsecureListen = errors.New("serve: refusing to listen beyond loopback without --client-ca or a token (set --insecure-listen-any to allow)")
	ErrBadConfig      = errors.New("serve: bad config")
	ErrClosed         = errors.New("serve: server closed")
)

// withDefaults returns a copy of c with every zero field set to its default,
// or an error when the combination is unsafe or nonsensical.
func (c Config) withDefaults() (Config, error) {
	if c.Auth == nil {
		auth, err := access.NewTokens(c.Tokens, c.TokenFile)
		if err != nil {
			return c, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
		c.Auth = auth
	}
	authed := c.ClientCAs != nil || c.ClientCAFile != "" || c.Auth.Configured()
	if c.Addr == "" {
		if authed || c.InsecureListenAny {
			c.Addr = ":" + DefaultPort
		} else {
			c.Addr = "127.0.0.1:" + DefaultPort
		}
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return c, fmt.Errorf("%w: address %q: %v", ErrBadConfig, c.Addr, err)
	}
	if !authed && !c.InsecureListenAny && !isLoopbackHost(host) {
		return c, fmt.Errorf("%w (address %q)", ErrInsecureListen, c.Addr)
	}
	if !c.DisableTCP {
		if c.TCPAddr == "" {
			c.TCPAddr = net.JoinHostPort(host, port)
		}
		thost, tport, err := net.SplitHostPort(c.TCPAddr)
		if err != nil {
			return c, fmt.Errorf("%w: TCP address %q: %v", ErrBadConfig, c.TCPAddr, err)
		}
		if _, err := strconv.ParseUint(tport, 10, 16); err != nil {
			return c, fmt.Errorf("%w: TCP address %q: port %q", ErrBadConfig, c.TCPAddr, tport)
		}
		if !authed && !c.InsecureListenAny && !isLoopbackHost(thost) {
			return c, fmt.Errorf("%w (TCP address %q)", ErrInsecureListen, c.TCPAddr)
		}
	}
	setInt(&c.MaxFrameBytes, 1<<20)
	setInt(&c.MaxBatch, 1024)
	if c.MaxStreamsPerConn <= 0 {
		c.MaxStreamsPerConn = DefaultMaxStreamsPerConn
	}
	if c.MaxStreamsPerConn > MaxStreamsPerConnLimit {
		return c, fmt.Errorf("%w: MaxStreamsPerConn %d is above %d", ErrBadConfig, c.MaxStreamsPerConn, int64(MaxStreamsPerConnLimit))
	}
	setInt(&c.MaxConns, DefaultMaxConns)
	setInt(&c.MaxConnsPerIP, DefaultMaxConnsPerIP)
	setInt(&c.MaxNewConnsPerIP, DefaultMaxNewConnsPerIP)
	setDur(&c.IdleTimeout, 30*time.Second)
	setDur(&c.HelloTimeout, 5*time.Second)
	if c.MaxHTTPBodyBytes <= 0 {
		c.MaxHTTPBodyBytes = 1 << 20
	}
	setDur(&c.StateInterval, 20*time.Millisecond)
	setDur(&c.MinSubscribeInterval, 5*time.Millisecond)
	if c.MaxFrameBytes < 1024 {
		return c, fmt.Errorf("%w: MaxFrameBytes %d is below 1024", ErrBadConfig, c.MaxFrameBytes)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func setInt(p *int, def int) {
	if *p <= 0 {
		*p = def
	}
}

func setDur(p *time.Duration, def time.Duration) {
	if *p <= 0 {
		*p = def
	}
}
