package lossyproxy

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/codec"
)

func selfSignedTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, NextProtos: []string{"lossy-test"}}
}

// snapshot is a small node-state text that changes a little every step.
func snapshot(step int) []byte {
	var b bytes.Buffer
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "counter_%02d %d\n", i, 1_000_000*i+step*(i%7))
	}
	return b.Bytes()
}

// TestQUICThroughLossyProxy runs a real QUIC connection through the proxy:
// a stream still completes at 30% loss, and at 30% and 80% loss a datagram
// subscriber fed with the delta codec in ack mode keeps getting fresh state,
// every datagram that arrives decoding exactly.
func TestQUICThroughLossyProxy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	qconf := &quic.Config{EnableDatagrams: true, MaxIdleTimeout: 20 * time.Second}
	ln, err := quic.ListenAddr("127.0.0.1:0", selfSignedTLS(t), qconf)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := startProxy(t, Config{Server: ln.Addr().String(), Seed: 3})

	serverErr := make(chan error, 1)
	go func() { serverErr <- serveSnapshots(ctx, ln) }()

	// Handshake without loss; then the loss goes on.
	conn, err := quic.DialAddr(ctx, p.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"lossy-test"}}, qconf)
	if err != nil {
		t.Fatalf("dialing through the proxy: %v", err)
	}
	defer conn.CloseWithError(0, "done")

	if err := p.SetDrop(0.3, 0.3); err != nil {
		t.Fatal(err)
	}
	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	msg := bytes.Repeat([]byte("decide "), 2000)
	if _, err := st.Write(msg); err != nil {
		t.Fatal(err)
	}
	st.Close()
	echo, err := io.ReadAll(st)
	if err != nil || !bytes.Equal(echo, msg) {
		t.Fatalf("stream echo at 30%% loss: %d bytes, %v", len(echo), err)
	}

	dec, err := codec.NewDecoder(codec.WithRing(32))
	if err != nil {
		t.Fatal(err)
	}
	for _, loss := range []float64{0.3, 0.8} {
		if err := p.SetDrop(loss, loss); err != nil {
			t.Fatal(err)
		}
		got, deltas, newest := 0, 0, -1
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			rctx, rcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			dg, err := conn.ReceiveDatagram(rctx)
			rcancel()
			if errors.Is(err, context.DeadlineExceeded) {
				continue
			}
			if err != nil {
				t.Fatalf("receiving: %v", err)
			}
			step := int(binary.LittleEndian.Uint32(dg))
			out, err := dec.DecodeAll(dg[4:], nil)
			if err != nil {
				t.Fatalf("loss %.0f%%: datagram of step %d: %v", 100*loss, step, err)
			}
			if !bytes.Equal(out, snapshot(step)) {
				t.Fatalf("loss %.0f%%: step %d decoded to other bytes", 100*loss, step)
			}
			if h, _ := codec.ParseHeader(dg[4:]); h.Kind == codec.KindDelta {
				deltas++
			}
			got++
			newest = max(newest, step)
			ack := binary.LittleEndian.AppendUint64(nil, codec.Hash(out))
			conn.SendDatagram(ack) // lost or not, like any datagram
		}
		t.Logf("loss %.0f%%: %d snapshots received in 3 s, %d deltas, newest step %d; proxy %+v", 100*loss, got, deltas, newest, p.Stats())
		// At 80% loss quic-go's congestion control (datagrams are congestion
		// controlled, and most acks are lost too) slows the sender to a
		// trickle: 13 to 77 snapshots in 3 s in our runs. Fresh state must
		// still arrive; deltas are asked for where the rate allows them.
		switch {
		case got < 3:
			t.Errorf("loss %.0f%%: %d snapshots in 3 s: want fresh state", 100*loss, got)
		case loss < 0.5 && (got < 20 || deltas == 0):
			t.Errorf("loss %.0f%%: %d snapshots, %d deltas: want a steady flow of deltas", 100*loss, got, deltas)
		}
	}
	cancel()
	if err := <-serverErr; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("server: %v", err)
	}
}

// serveSnapshots accepts one connection, echoes its first stream, and sends
// a snapshot datagram every 2 ms, encoded against what the client acked.
func serveSnapshots(ctx context.Context, ln *quic.Listener) error {
	conn, err := ln.Accept(ctx)
	if err != nil {
		return err
	}
	enc, err := codec.NewEncoder(codec.WithMode(codec.ModeAck), codec.WithRing(32))
	if err != nil {
		return err
	}
	go func() {
		st, err := conn.AcceptStream(ctx)
		if err != nil {
			return
		}
		io.Copy(st, st)
		st.Close()
	}()
	go func() {
		for {
			ack, err := conn.ReceiveDatagram(ctx)
			if err != nil {
				return
			}
			if len(ack) == 8 {
				enc.Ack(binary.LittleEndian.Uint64(ack))
			}
		}
	}()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for step := 0; ; step++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		dg := binary.LittleEndian.AppendUint32(nil, uint32(step))
		if dg, err = enc.EncodeAll(snapshot(step), dg); err != nil {
			return err
		}
		// A datagram quic-go cannot send now (congestion window full) is
		// just one more lost snapshot: the next one follows in 2 ms.
		_ = conn.SendDatagram(dg)
	}
}
