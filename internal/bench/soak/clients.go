package soak

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/wire"
)

// subscribers hold node-state subscriptions, half on streams and half on
// QUIC datagrams, and count the snapshots that arrive.
type subscribers struct {
	snapshots atomic.Int64
}

func (s *subscribers) run(ctx context.Context, ap *agentProc, n int) {
	var wg sync.WaitGroup
	for i := range n {
		mode := wire.SubscribeMode_SUBSCRIBE_MODE_STREAM
		if i%2 == 1 {
			mode = wire.SubscribeMode_SUBSCRIBE_MODE_DATAGRAM
		}
		cl, err := client.Dial(ctx, ap.QUICAddr, clientConfig(ap))
		if err != nil {
			continue // counted as missing snapshots; the run goes on
		}
		ch, err := cl.Subscribe(ctx, mode)
		if err != nil {
			cl.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for range ch {
				s.snapshots.Add(1)
			}
		}()
	}
	wg.Wait()
}

// churner is a client that connects, says Hello and disconnects, perSecond
// times a second, all from one UDP socket.
type churner struct {
	connects, failures atomic.Int64
}

func (c *churner) run(ctx context.Context, ap *agentProc, perSecond int) {
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		c.failures.Add(1)
		return
	}
	tr := &quic.Transport{Conn: udp}
	defer tr.Close()
	cfg := clientConfig(ap)
	cfg.Transport, cfg.Streams = tr, 1
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			cl, err := client.Dial(dctx, ap.QUICAddr, cfg)
			if err != nil {
				if ctx.Err() == nil {
					c.failures.Add(1)
				}
				return
			}
			c.connects.Add(1)
			cl.Close()
		}()
	}
}

// malformer is a client that, perSecond times a second, opens a stream on
// its connection and sends a malformed frame there: random bytes, a frame
// whose payload fails its checksum, or a good frame of a message no client
// sends. The agent must answer each with an error on that stream alone;
// the connection is dialled again only if it ends.
type malformer struct {
	answered, reconnects atomic.Int64
}

func (m *malformer) run(ctx context.Context, ap *agentProc, perSecond int) {
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	defer tick.Stop()
	rng := rand.New(rand.NewPCG(7, 16))
	var conn *quic.Conn
	defer func() {
		if conn != nil {
			conn.CloseWithError(0, "soak over")
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if conn == nil || conn.Context().Err() != nil {
			if conn != nil {
				m.reconnects.Add(1)
			}
			var err error
			if conn, err = helloConn(ctx, ap); err != nil {
				conn = nil
				continue
			}
		}
		if m.sendBad(ctx, conn, malformedFrame(i, rng)) {
			m.answered.Add(1)
		}
	}
}

// helloConn dials the native protocol and says Hello.
func helloConn(ctx context.Context, ap *agentProc) (*quic.Conn, error) {
	cfg := clientConfig(ap)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(dctx, ap.QUICAddr, cfg.TLSConfig("localhost", wire.ALPNNative), &quic.Config{MaxIdleTimeout: 30 * time.Second, KeepAlivePeriod: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	str, err := conn.OpenStreamSync(dctx)
	if err == nil {
		err = exchange(str, &wire.Envelope{Body: &wire.Envelope_Hello{Hello: &wire.Hello{Version: wire.ProtocolVersion}}}, func(env *wire.Envelope) bool { return env.GetHelloOk() != nil })
	}
	if err != nil {
		conn.CloseWithError(0, "hello failed")
		return nil, err
	}
	return conn, nil
}

// exchange writes one message on str and reads one answer, which ok must accept.
func exchange(str *quic.Stream, msg *wire.Envelope, ok func(*wire.Envelope) bool) error {
	fw, err := wire.NewFrameWriter(str, wire.CallOptions()...)
	if err != nil {
		return err
	}
	fr, err := wire.NewFrameReader(str, 0, wire.CallOptions()...)
	if err != nil {
		return err
	}
	if err := fw.Write(msg); err != nil {
		return err
	}
	str.SetReadDeadline(time.Now().Add(5 * time.Second))
	var env wire.Envelope
	if err := fr.Read(&env); err != nil {
		return err
	}
	if !ok(&env) {
		return errors.New("unexpected answer")
	}
	return nil
}

// sendBad sends frame on a new stream and reports whether the agent
// answered with an Error there (and closed the stream).
func (m *malformer) sendBad(ctx context.Context, conn *quic.Conn, frame []byte) bool {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	str, err := conn.OpenStreamSync(sctx)
	if err != nil {
		return false
	}
	defer str.CancelRead(0)
	if _, err := str.Write(frame); err != nil {
		return false
	}
	str.Close()
	fr, err := wire.NewFrameReader(str, 0, wire.CallOptions()...)
	if err != nil {
		return false
	}
	str.SetReadDeadline(time.Now().Add(5 * time.Second))
	var env wire.Envelope
	if err := fr.Read(&env); err != nil {
		return false
	}
	if env.GetError() == nil {
		return false
	}
	_, _ = io.Copy(io.Discard, str) // the agent finishes its side
	return true
}

// malformedFrame is the i-th bad frame: three kinds in turn.
func malformedFrame(i int, rng *rand.Rand) []byte {
	var good bytes.Buffer
	fw, err := wire.NewFrameWriter(&good, wire.CallOptions()...)
	if err == nil {
		switch i % 3 {
		case 1: // a decide request whose payload no longer matches its hash
			fw.Write(&wire.Envelope{Body: &wire.Envelope_DecideRequest{DecideRequest: &wire.DecideRequest{ReqId: 1,
				Tasks: []*wire.Task{{TaskId: "malformed", Class: "scoring", SlaMs: 50}}}}})
			b := good.Bytes()
			b[len(b)-1] ^= 0xff
			return b
		case 2: // a well-formed frame of a message only the agent sends
			fw.Write(&wire.Envelope{Body: &wire.Envelope_HelloOk{HelloOk: &wire.HelloOK{Version: wire.ProtocolVersion}}})
			return good.Bytes()
		}
	}
	b := make([]byte, 64+rng.IntN(256))
	for k := range b {
		b[k] = byte(rng.Uint32())
	}
	return b
}
