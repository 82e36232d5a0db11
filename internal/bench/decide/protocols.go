package decide

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/wire"
)

// caller is one benchmark client: one connection of one protocol.
type caller interface {
	decide(ctx context.Context, tasks []*wire.Task) (int, error)
	close()
}

type env struct {
	quicAddr string
	tcpAddr  string // the agent endpoint's TCP port: JSON over HTTP/1.1 and HTTP/2, gRPC
	grpcAddr string // a standalone gRPC server on the same call path
	ccfg     client.Config
	// quicBytes is the UDP payload bytes of the agent's open QUIC
	// connections, both ways: the QUIC protocols' bytes on the wire.
	quicBytes func() int64
}

// newUDPTransport is a client's own UDP socket, unwrapped: quic-go's
// batched reads and writes and its socket buffer sizes need the
// *net.UDPConn. Its bytes are counted on the agent's side (quicBytes).
func newUDPTransport() (*quic.Transport, error) {
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("client socket: %w", err)
	}
	return &quic.Transport{Conn: udp}, nil
}

// native: the Go client library over triage/1.
type nativeCaller struct {
	c  *client.Client
	tr *quic.Transport
}

func newNative(ctx context.Context, e env, _ *byteCounter) (caller, error) {
	tr, err := newUDPTransport()
	if err != nil {
		return nil, err
	}
	cfg := e.ccfg
	cfg.Transport = tr
	c, err := client.Dial(ctx, e.quicAddr, cfg)
	if err != nil {
		tr.Close()
		return nil, err
	}
	return &nativeCaller{c: c, tr: tr}, nil
}

func (n *nativeCaller) decide(ctx context.Context, tasks []*wire.Task) (int, error) {
	r, err := n.c.Decide(ctx, tasks)
	return len(r.GetDecisions()), err
}

func (n *nativeCaller) close() { n.c.Close(); n.tr.Close() }

// jsonCaller: POST /v1/decide with JSON, over HTTP/3 (h3) or over the
// agent's TCP port (http1, http2). One connection per caller: the
// transports are limited to one connection per host, so HTTP/1.1 calls
// queue on it as an HTTP/1.1 client's would, and HTTP/2 calls multiplex.
type jsonCaller struct {
	hc      *http.Client
	closeFn func()
	url     string
}

func newH3(ctx context.Context, e env, _ *byteCounter) (caller, error) {
	tr, err := newUDPTransport()
	if err != nil {
		return nil, err
	}
	ua, err := net.ResolveUDPAddr("udp", e.quicAddr)
	if err != nil {
		return nil, err
	}
	rt := &http3.Transport{
		TLSClientConfig: e.ccfg.TLSConfig("localhost", wire.ALPNHTTP3),
		Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			return tr.Dial(ctx, ua, tc, qc)
		},
	}
	return connectJSON(ctx, &jsonCaller{hc: &http.Client{Transport: rt}, closeFn: func() { rt.Close(); tr.Close() }, url: "https://" + e.quicAddr + "/v1/decide"})
}

// newTCPJSON is JSON over the agent's TCP port with ALPN alpn ("http/1.1" or "h2").
func newTCPJSON(alpn string) func(context.Context, env, *byteCounter) (caller, error) {
	return func(ctx context.Context, e env, bc *byteCounter) (caller, error) {
		rt := &http.Transport{
			TLSClientConfig: e.ccfg.TLSConfig("localhost", alpn),
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				var d net.Dialer
				c, err := d.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return countingConn{Conn: c, c: bc}, nil
			},
			MaxConnsPerHost:     1,
			MaxIdleConnsPerHost: 1,
			Protocols:           new(http.Protocols),
		}
		if alpn == "h2" {
			rt.Protocols.SetHTTP2(true)
		} else {
			rt.Protocols.SetHTTP1(true)
		}
		return connectJSON(ctx, &jsonCaller{hc: &http.Client{Transport: rt}, closeFn: rt.CloseIdleConnections, url: "https://" + e.tcpAddr + "/v1/decide"})
	}
}

// connectJSON makes the first call now, so the handshake is not in the
// first latency sample.
func connectJSON(ctx context.Context, h *jsonCaller) (caller, error) {
	if _, err := h.decide(ctx, []*wire.Task{{TaskId: "warm-up", SlaMs: 10}}); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

func (h *jsonCaller) decide(ctx context.Context, tasks []*wire.Task) (int, error) {
	body, err := json.Marshal(&wire.DecideRequestJSON{Tasks: wire.TasksToJSON(tasks)})
	if err != nil {
		return 0, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := h.hc.Do(hreq)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, data)
	}
	var out wire.DecideResponseJSON
	if err := json.Unmarshal(data, &out); err != nil {
		return 0, err
	}
	return len(out.Decisions), nil
}

func (h *jsonCaller) close() { h.closeFn() }

// grpc: the same protobuf DecideRequest, unary call over HTTP/2 on TLS 1.3
// TCP, to a gRPC server with gRPC's own transport (grpc) or to the agent's
// TCP port, which shares HTTP/2 with the JSON API (grpc-agent).
type grpcCaller struct {
	cc *grpc.ClientConn
}

func newGRPC(ctx context.Context, e env, bc *byteCounter) (caller, error) {
	return dialGRPC(ctx, e.grpcAddr, e, bc)
}

func newGRPCAgent(ctx context.Context, e env, bc *byteCounter) (caller, error) {
	return dialGRPC(ctx, e.tcpAddr, e, bc)
}

func dialGRPC(ctx context.Context, addr string, e env, bc *byteCounter) (caller, error) {
	creds := credentials.NewTLS(e.ccfg.TLSConfig("localhost", "h2"))
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: c, c: bc}, nil
		}))
	if err != nil {
		return nil, err
	}
	g := &grpcCaller{cc: cc}
	if _, err := g.decide(ctx, []*wire.Task{{TaskId: "warm-up", SlaMs: 10}}); err != nil {
		cc.Close()
		return nil, err
	}
	return g, nil
}

func (g *grpcCaller) decide(ctx context.Context, tasks []*wire.Task) (int, error) {
	out := new(wire.DecideResponse)
	if err := g.cc.Invoke(ctx, serve.GRPCDecideMethod, &wire.DecideRequest{ReqId: 1, Tasks: tasks}, out); err != nil {
		return 0, err
	}
	return len(out.GetDecisions()), nil
}

func (g *grpcCaller) close() { g.cc.Close() }
