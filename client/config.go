// Package client is the Go client library of the triage agent's native QUIC
// protocol (ALPN triage/1): batched, pipelined decide calls on a few streams,
// outcome reports, and node-state subscriptions on a stream or as QUIC
// datagrams. A Client reconnects by itself with exponential backoff; every
// new connection starts with fresh codec state (its first frames are full),
// and a datagram subscriber that meets an unknown base asks for a full frame.
package client

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/wire"
)

// Config configures a Client. The zero value verifies the server against the
// system roots; set RootCAs or PinSHA256 for an agent with its self-signed
// certificate.
type Config struct {
	ServerName string         // TLS server name; default the host of addr
	RootCAs    *x509.CertPool // trusted roots; nil = system roots
	// PinSHA256 is the hex SHA-256 of the server certificate (what the agent
	// prints at start); when set it replaces chain verification.
	PinSHA256 string
	// InsecureSkipVerify accepts any server certificate (testing only).
	InsecureSkipVerify bool
	// Certificates are presented for mutual TLS (agent --client-ca).
	Certificates []tls.Certificate
	// Token is the bearer token sent in Hello (agent --token).
	Token string

	Streams        int           // decide streams per connection; default 4
	MaxFrameBytes  int           // largest frame accepted; default 1 MiB (the agent's default)
	DialTimeout    time.Duration // per connection attempt; default 5s
	IdleTimeout    time.Duration // QUIC idle timeout; default 30s
	KeepAlive      time.Duration // QUIC keep-alive period; default 5s
	MinBackoff     time.Duration // first reconnect delay; default 50ms
	MaxBackoff     time.Duration // longest reconnect delay; default 5s
	SubscribeQueue int           // snapshots buffered per subscription before the oldest is dropped; default 16
	// HedgeAfter, when positive, is how long a call waits for its answer
	// before sending the same request again on another stream (then twice as
	// long, and so on, MaxHedges times). Off by default: under heavy loss
	// the extra copies fill QUIC's congestion window and made calls slower
	// in our loss tests (docs/endpoint.md); it helps only when one stream is
	// stuck behind a slow request.
	HedgeAfter time.Duration
	MaxHedges  int // default 3
	// DatagramAfter is how long a decide call waits on its stream before it
	// also goes out as QUIC datagrams (a copy every 100ms until answered),
	// for lossy paths. Default 250ms; negative disables it.
	DatagramAfter time.Duration

	// LocalDecisions makes Decide answer from the decision table the agent
	// pushes (docs/local-decisions.md) when the table is fresh and has a
	// cell for every task of the call, without a round trip; other calls go
	// to the agent. DecideLocal is the allocation-free path for one task.
	// An agent that publishes no tables gets every task, as without it.
	LocalDecisions bool
	// MaxStaleness is the oldest table decided from: older, every task goes
	// to the agent until a newer table comes. Default DefaultMaxStaleness.
	// The agent is told it, and re-dates an unchanged table at least every
	// third of it.
	MaxStaleness time.Duration
	// LocalReportEvery is how often local decisions are reported to the
	// agent (sooner when 512 are waiting). Default 10ms: each report is a
	// round trip that wakes the agent, and the client counts its own
	// decisions in its queue estimate at once, so only the agent's view
	// for other clients waits for it.
	LocalReportEvery time.Duration

	// Transport, when set, dials through this QUIC transport (to count bytes,
	// to share a socket); nil makes a fresh UDP socket per connection.
	Transport *quic.Transport
	Logger    *slog.Logger
}

// Errors a caller can test for with errors.Is.
var (
	ErrClosed          = errors.New("client: closed")
	ErrUnauthenticated = errors.New("client: agent refused the credentials")
	ErrBadConfig       = errors.New("client: bad config")
)

// ServerError is an Error message (or stream/connection error code) from the agent.
type ServerError struct {
	Code   wire.Code
	Reason string
}

func (e *ServerError) Error() string { return fmt.Sprintf("agent: %s: %s", e.Code, e.Reason) }

// serverError is the ServerError an Error envelope of the agent carries.
func serverError(e *wire.Error) *ServerError {
	return &ServerError{Code: wire.Code(e.GetCode()), Reason: e.GetReason()}
}

// Is makes errors.Is(err, ErrUnauthenticated) true for CodeUnauthenticated.
func (e *ServerError) Is(target error) bool {
	return target == ErrUnauthenticated && e.Code == wire.CodeUnauthenticated
}

// DefaultMaxStaleness is Config.MaxStaleness when it is not set.
const DefaultMaxStaleness = 50 * time.Millisecond

func (c Config) withDefaults() (Config, error) {
	if c.Streams <= 0 {
		c.Streams = 4
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = wire.DefaultMaxFrame
	}
	def := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	def(&c.DialTimeout, 5*time.Second)
	def(&c.IdleTimeout, 30*time.Second)
	def(&c.KeepAlive, 5*time.Second)
	if c.MaxHedges <= 0 {
		c.MaxHedges = 3
	}
	if c.DatagramAfter == 0 {
		c.DatagramAfter = 250 * time.Millisecond
	}
	def(&c.MinBackoff, 50*time.Millisecond)
	def(&c.MaxBackoff, 5*time.Second)
	def(&c.MaxStaleness, DefaultMaxStaleness)
	def(&c.LocalReportEvery, 10*time.Millisecond)
	if c.SubscribeQueue <= 0 {
		c.SubscribeQueue = 16
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.PinSHA256 != "" {
		pin := strings.ToLower(strings.ReplaceAll(c.PinSHA256, ":", ""))
		if b, err := hex.DecodeString(pin); err != nil || len(b) != sha256.Size {
			return c, fmt.Errorf("%w: --pin-sha256 must be 64 hex digits (the agent's certificate fingerprint), got %q", ErrBadConfig, c.PinSHA256)
		}
		c.PinSHA256 = pin
	}
	return c, nil
}

// TLSConfig builds the client TLS configuration for the given ALPN; the
// HTTP/3 and gRPC clients of `triage bench decide` use it too.
func (c Config) TLSConfig(serverName, alpn string) *tls.Config {
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS13,
		ServerName:         serverName,
		RootCAs:            c.RootCAs,
		Certificates:       c.Certificates,
		NextProtos:         []string{alpn},
		InsecureSkipVerify: c.InsecureSkipVerify,
	}
	if c.ServerName != "" {
		tc.ServerName = c.ServerName
	}
	if pin := strings.ToLower(strings.ReplaceAll(c.PinSHA256, ":", "")); pin != "" {
		// The pin replaces chain and name verification: the self-signed
		// certificate is trusted exactly, by its hash.
		tc.InsecureSkipVerify = true
		tc.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("server sent no certificate")
			}
			sum := sha256.Sum256(raw[0])
			if got := hex.EncodeToString(sum[:]); got != pin {
				return fmt.Errorf("server certificate sha256 %s does not match the pin %s", got, pin)
			}
			return nil
		}
	}
	return tc
}
