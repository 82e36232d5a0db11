package serve_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/quic-go/quic-go"
	"google.golang.org/protobuf/proto"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/codec"
	"github.com/triage-agent/triage/internal/testpki"
	"github.com/triage-agent/triage/wire"
)

func decidePayload(t *testing.T, n int) []byte {
	b, err := proto.Marshal(&wire.Envelope{Body: &wire.Envelope_DecideRequest{DecideRequest: &wire.DecideRequest{ReqId: 7, Tasks: sampleTasks(n)}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each case sends one kind of bad input on its own stream; the server must
// answer with the right code and reason, keep the connection (the same raw
// connection sends a good request afterwards), and serve a new client.
func TestBadInputClosesOnlyItsStream(t *testing.T) {
	ts := startGoServer(t, serve.Config{MaxFrameBytes: 64 << 10})
	rc := dialRaw(t, ts, "", nil)

	good := decidePayload(t, 2)
	frames := encodeFrames(t, good, decidePayload(t, 3))
	delta := frames[1] // a D frame against good, which a fresh stream never saw
	if codec.Kind(delta[0]) != codec.KindDelta {
		t.Fatalf("second frame is %v, want a delta", codec.Kind(delta[0]))
	}
	badSum := append([]byte(nil), frames[0]...)
	badSum[9] ^= 0xff // payload hash

	// A zstd body of 256 KiB of zeros (a few dozen bytes), announced as a
	// 100-byte payload: it would expand 2600-fold.
	zenc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	bomb := zenc.EncodeAll(make([]byte, 256<<10), nil)
	bombFrame := []byte{'F'}
	bombFrame = append(bombFrame, make([]byte, 16)...)
	bombFrame = append(bombFrame, 100, byte(len(bomb)))
	bombFrame = append(bombFrame, bomb...)

	// An announced payload larger than the limit (the frame itself is small).
	bigFrames := encodeFrames(t, make([]byte, 1<<20))

	cases := []struct {
		name   string
		in     []byte
		code   wire.Code
		why    string
		finish bool // send FIN after the bytes
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: agent\r\n\r\n"), wire.CodeMalformed, "malformed", true},
		{"random bytes", []byte{0x05, 0xde, 0xad, 0xbe, 0xef, 0x00}, wire.CodeMalformed, "malformed", false},
		{"lying length, short body", append([]byte{0x90, 0x03}, frames[0][:10]...), wire.CodeMalformed, "unexpected EOF", true},
		{"lying length, past limit", []byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3}, wire.CodeFrameTooLarge, "limit", false},
		{"length disagrees with codec header", append([]byte{byte(len(frames[0]) + 3)}, append(frames[0], 1, 2, 3)...), wire.CodeMalformed, "header says", false},
		{"zstd bomb", framed(bombFrame), wire.CodeBodyTooLarge, "past", false},
		{"announced payload past limit", framed(bigFrames[0]), wire.CodeBodyTooLarge, "limit", false},
		{"unknown base", framed(delta), wire.CodeUnknownBase, "unknown base", false},
		{"wrong checksum", framed(badSum), wire.CodeChecksum, "checksum", false},
		{"valid frame, not protobuf", framed(encodeFrames(t, []byte("\xff\xff\xff\xff not a message"))[0]), wire.CodeMalformed, "malformed", false},
		{"server-only message", framed(encodeFrames(t, mustMarshal(t, &wire.Envelope{Body: &wire.Envelope_HelloOk{HelloOk: &wire.HelloOK{}}}))[0]), wire.CodeMalformed, "unexpected", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := ts.Stats().StreamErrors.Load()
			e, code := rc.sendRaw(tc.in, tc.finish)
			if wire.Code(e.GetCode()) != tc.code || code != tc.code {
				t.Fatalf("Error code %v, stream code %v; want %v (reason %q)", wire.Code(e.GetCode()), code, tc.code, e.GetReason())
			}
			if !strings.Contains(e.GetReason(), tc.why) {
				t.Errorf("reason %q does not say %q", e.GetReason(), tc.why)
			}
			if ts.Stats().StreamErrors.Load() != before+1 {
				t.Errorf("stream errors did not count this one")
			}
			// The same connection still serves a good request on a new stream.
			if _, e := rc.decideOnNewStream(good); e != nil {
				t.Fatalf("after %s the connection is broken: %v", tc.name, e)
			}
		})
	}
	expectGoodClient(t, ts, ts.clientConfig())
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decideOnNewStream sends one good decide payload and reads the answer.
func (rc *rawConn) decideOnNewStream(payload []byte) (*wire.DecideResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	str, err := rc.conn.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	defer str.Close()
	_ = str.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := str.Write(framed(encodeFrames(rc.t, payload)[0])); err != nil {
		return nil, err
	}
	fr, _ := wire.NewFrameReader(str, 0)
	var env wire.Envelope
	if err := fr.Read(&env); err != nil {
		return nil, err
	}
	if env.GetDecideResponse() == nil {
		return nil, errors.New("no DecideResponse")
	}
	return env.GetDecideResponse(), nil
}

func TestThousandsOfStreams(t *testing.T) {
	b, _ := goBackend()
	const limit = 32
	ts := startServer(t, serve.Config{MaxStreamsPerConn: limit}, b)
	rc := dialRaw(t, ts, "", nil)
	var open []*quic.Stream
	refused := 0
	for i := 0; i < 5000; i++ {
		str, err := rc.conn.OpenStream()
		if err != nil {
			var tooMany interface{ Temporary() bool }
			if errors.As(err, &tooMany) || strings.Contains(err.Error(), "too many open streams") {
				refused++
				continue
			}
			t.Fatalf("OpenStream %d: %v", i, err)
		}
		// A length prefix announcing 16 bytes that never come: a partial
		// frame, which holds the stream open on the server. (A 0 byte would
		// be a whole, invalid frame: the server would reset the stream and
		// hand its credit back, racing the count below.)
		str.Write([]byte{16})
		open = append(open, str)
	}
	if len(open) > limit {
		t.Fatalf("client could open %d streams, the server allows %d", len(open), limit)
	}
	if refused < 5000-limit {
		t.Fatalf("only %d of 5000 streams refused", refused)
	}
	t.Logf("5000 streams asked: %d opened (limit %d, one used by Hello), %d refused by flow control", len(open), limit, refused)
	// Closing them frees credit: the connection works again afterwards.
	for _, s := range open {
		s.CancelWrite(0)
		s.CancelRead(0)
	}
	eventually(t, 10*time.Second, "connection did not recover after releasing its streams", func() error {
		resp, err := rc.decideOnNewStream(decidePayload(t, 1))
		if err == nil && len(resp.GetDecisions()) != 1 {
			err = fmt.Errorf("%d decisions for 1 task", len(resp.GetDecisions()))
		}
		return err
	})
	expectGoodClient(t, ts, ts.clientConfig())
}

func TestTokenAuth(t *testing.T) {
	b, _ := goBackend()
	const token = "s3cret-token-0123456789"
	ts := startServer(t, serve.Config{Tokens: []string{token}}, b)
	for _, bad := range []string{"", "wrong-token-0123456789"} {
		cfg := ts.clientConfig()
		cfg.Token = bad
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := client.Dial(ctx, ts.addr(), cfg)
		cancel()
		if !errors.Is(err, client.ErrUnauthenticated) {
			t.Fatalf("token %q: err %v, want ErrUnauthenticated", bad, err)
		}
		if !strings.Contains(err.Error(), "bearer token") {
			t.Errorf("error %q does not say what was wrong", err)
		}
	}
	cfg := ts.clientConfig()
	cfg.Token = token
	expectGoodClient(t, ts, cfg)
}

func TestMutualTLS(t *testing.T) {
	b, _ := goBackend()
	ca := testpki.NewCA(t, "triage test CA")
	other := testpki.NewCA(t, "another CA")
	ts := startServer(t, serve.Config{ClientCAs: ca.Pool}, b)

	cases := map[string][]tls.Certificate{
		"no certificate":              nil,
		"certificate of another CA":   {other.IssueClient(t, "upstream-service")},
		"self-signed like the server": {mustSelfSigned(t)},
	}
	for name, certs := range cases {
		cfg := ts.clientConfig()
		cfg.Certificates = certs
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := client.Dial(ctx, ts.addr(), cfg)
		cancel()
		if err == nil {
			t.Fatalf("%s: dial succeeded", name)
		}
		t.Logf("%s: %v", name, err)
		if !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: error %q does not name the certificate", name, err)
		}
	}
	cfg := ts.clientConfig()
	cfg.Certificates = []tls.Certificate{ca.IssueClient(t, "upstream-service")}
	expectGoodClient(t, ts, cfg)
}

func mustSelfSigned(t *testing.T) tls.Certificate {
	c, err := serve.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConfigRefusesOpenListenWithoutAuth(t *testing.T) {
	b, _ := goBackend()
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		_, err := serve.New(serve.Config{Addr: addr}, b)
		if !errors.Is(err, serve.ErrInsecureListen) {
			t.Errorf("addr %q without auth: err %v, want ErrInsecureListen", addr, err)
		}
	}
	s, err := serve.New(serve.Config{Addr: "0.0.0.0:0", InsecureListenAny: true, Logger: quietLogger()}, b)
	if err != nil {
		t.Fatalf("InsecureListenAny: %v", err)
	}
	s.Close()
	s, err = serve.New(serve.Config{Addr: "0.0.0.0:0", Tokens: []string{"0123456789abcdef"}, Logger: quietLogger()}, b)
	if err != nil {
		t.Fatalf("with a token: %v", err)
	}
	s.Close()
	if _, err := serve.New(serve.Config{Tokens: []string{"short"}}, b); !errors.Is(err, serve.ErrBadConfig) {
		t.Errorf("short token: err %v, want ErrBadConfig", err)
	}
}

func TestConnectionLimitPerIP(t *testing.T) {
	ts := startGoServer(t, serve.Config{MaxConnsPerIP: 2})
	c1 := ts.dial(t, ts.clientConfig())
	c2 := ts.dial(t, ts.clientConfig())
	ctx := callCtx(t)
	ts.wantTooManyConnections(t, ctx, "third connection")
	for _, c := range []*client.Client{c1, c2} {
		if _, err := c.Decide(ctx, sampleTasks(1)); err != nil {
			t.Fatalf("admitted client: %v", err)
		}
	}
	c2.Close()
	// The slot frees when the connection ends.
	eventually(t, 10*time.Second, "slot never freed", func() error { return dialAndClose(ctx, ts) })
}

var _ = x509.NewCertPool
