package serve_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
)

// Past MaxNewConnsPerIP new connections a second, a QUIC attempt is
// refused before its handshake (CONNECTION_REFUSED) and a TCP one at
// accept; both are counted.
func TestNewConnectionRatePerIP(t *testing.T) {
	ts := startGoServer(t, serve.Config{MaxNewConnsPerIP: 3})
	ctx := callCtx(t)
	var refused error
	for i := range 10 {
		c, err := client.Dial(ctx, ts.addr(), ts.clientConfig())
		if err != nil {
			refused = err
			break
		}
		c.Close()
		if i >= 5 {
			t.Fatalf("%d connections within a second passed a limit of 3", i+1)
		}
	}
	var te *quic.TransportError
	if !errors.As(refused, &te) || te.ErrorCode != quic.ConnectionRefused {
		t.Fatalf("over the rate: %v, want CONNECTION_REFUSED", refused)
	}
	before := ts.Stats().RejectedConns.Load()
	if err := ts.dialTCPAndRead(); err == nil {
		t.Fatal("a TCP connection over the rate was served")
	}
	if ts.Stats().RejectedConns.Load() <= before {
		t.Error("refusals over the rate not counted")
	}
	// The budget refills: a second later a client gets through.
	time.Sleep(time.Second)
	expectGoodClient(t, ts, ts.clientConfig())
}

// An address over MaxConnsPerIP is told why once (CodeTooManyConnections,
// after the handshake); trying again within the second it is refused
// before the handshake, until one of its connections closes.
func TestConnectionLimitRefusedEarlyWhenRepeated(t *testing.T) {
	ts := startGoServer(t, serve.Config{MaxConnsPerIP: 1})
	c1 := ts.dial(t, ts.clientConfig())
	ctx := callCtx(t)
	ts.wantTooManyConnections(t, ctx, "first connection over the limit")
	_, err := client.Dial(ctx, ts.addr(), ts.clientConfig())
	var te *quic.TransportError
	if !errors.As(err, &te) || te.ErrorCode != quic.ConnectionRefused {
		t.Fatalf("second connection over the limit: %v, want CONNECTION_REFUSED", err)
	}
	c1.Close()
	eventually(t, 5*time.Second, "the slot never freed", func() error { return dialAndClose(ctx, ts) })
}
