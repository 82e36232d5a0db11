package serve_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/codec"
	"github.com/triage-agent/triage/wire"
)

// rawConn is a hand-driven triage/1 connection, for sending what the client
// library never would.
type rawConn struct {
	t    *testing.T
	conn *quic.Conn
}

// dialRaw connects and completes the Hello exchange with token.
func dialRaw(t *testing.T, ts *testServer, token string, qc *quic.Config) *rawConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if qc == nil {
		qc = &quic.Config{EnableDatagrams: true}
	}
	conn, err := quic.DialAddr(ctx, ts.addr(), pinnedTLS(ts, wire.ALPNNative), qc)
	if err != nil {
		t.Fatalf("dialing raw: %v", err)
	}
	t.Cleanup(func() { conn.CloseWithError(0, "") })
	rc := &rawConn{t: t, conn: conn}
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fw, _ := wire.NewFrameWriter(str)
	fr, _ := wire.NewFrameReader(str, 0)
	if err := fw.Write(&wire.Envelope{Body: &wire.Envelope_Hello{Hello: &wire.Hello{Version: wire.ProtocolVersion, Token: token}}}); err != nil {
		t.Fatal(err)
	}
	var env wire.Envelope
	if err := fr.Read(&env); err != nil || env.GetHelloOk() == nil {
		t.Fatalf("hello: %v %v", err, env.GetBody())
	}
	return rc
}

// sendRaw writes b on a new stream (and finishes it when finish is set),
// and returns what the server answered: the Error message and the code of
// the server's STOP_SENDING, which must both name the same problem. After a
// FIN the STOP_SENDING cannot be seen (nothing is left to send): the code
// returned is then the Error's.
func (rc *rawConn) sendRaw(b []byte, finish bool) (*wire.Error, wire.Code) {
	rc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	str, err := rc.conn.OpenStreamSync(ctx)
	if err != nil {
		rc.t.Fatal(err)
	}
	_ = str.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := str.Write(b); err != nil {
		rc.t.Fatalf("writing raw bytes: %v", err)
	}
	if finish {
		str.Close()
	}
	fr, _ := wire.NewFrameReader(str, 0)
	var env wire.Envelope
	if err := fr.Read(&env); err != nil {
		rc.t.Fatalf("reading the server's answer: %v", err)
	}
	e := env.GetError()
	if e == nil {
		rc.t.Fatalf("server answered %T, want Error", env.GetBody())
	}
	if err := fr.Read(&env); !errors.Is(err, io.EOF) {
		rc.t.Errorf("after the Error the server should finish the stream, got %v", err)
	}
	if finish {
		return e, wire.Code(e.GetCode())
	}
	// The server stopped reading with the code: a further write fails with it.
	var code wire.Code
	for i := 0; i < 50; i++ {
		_, err := str.Write([]byte{0})
		var se *quic.StreamError
		if errors.As(err, &se) {
			code = wire.Code(se.ErrorCode)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return e, code
}

func framed(frame []byte) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(frame))), frame...)
}

// encodeFrames encodes payloads with one stream-mode encoder.
func encodeFrames(t *testing.T, payloads ...[]byte) [][]byte {
	t.Helper()
	enc, err := codec.NewEncoder(codec.WithMaxSize(8 << 20))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, p := range payloads {
		f, err := enc.EncodeAll(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}
