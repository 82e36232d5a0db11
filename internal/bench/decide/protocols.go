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
	grpcAddr string
	ccfg     client.Config
}

func newUDPTransport(bc *byteCounter) (*quic.Transport, error) {
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("client socket: %w", err)
	}
	return &quic.Transport{Conn: countingPacketConn{PacketConn: udp, c: bc}}, nil
}

// native: the Go client library over triage/1.
type nativeCaller struct {
	c  *client.Client
	tr *quic.Transport
}

func newNative(ctx context.Context, e env, bc *byteCounter) (caller, error) {
	tr, err := newUDPTransport(bc)
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

// h3: POST /v1/decide with JSON over HTTP/3.
type h3Caller struct {
	hc  *http.Client
	rt  *http3.Transport
	tr  *quic.Transport
	url string
}

func newH3(ctx context.Context, e env, bc *byteCounter) (caller, error) {
	tr, err := newUDPTransport(bc)
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
	h := &h3Caller{hc: &http.Client{Transport: rt}, rt: rt, tr: tr, url: "https://" + e.quicAddr + "/v1/decide"}
	// Connect now, so the handshake is not in the first latency sample.
	if _, err := h.decide(ctx, []*wire.Task{{Id: 1, SlaMs: 10}}); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

func (h *h3Caller) decide(ctx context.Context, tasks []*wire.Task) (int, error) {
	req := wire.DecideRequestJSON{Tasks: make([]wire.TaskJSON, len(tasks))}
	for i, t := range tasks {
		req.Tasks[i] = wire.TaskJSON{ID: t.GetId(), Class: t.GetClass(), SLAMs: t.GetSlaMs(), CostMs: t.GetCostMs(), Tenant: t.GetTenant()}
	}
	body, err := json.Marshal(&req)
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

func (h *h3Caller) close() { h.rt.Close(); h.tr.Close() }

// grpc: the same protobuf DecideRequest, unary call over HTTP/2 on TLS 1.3 TCP.
type grpcCaller struct {
	cc *grpc.ClientConn
}

func newGRPC(ctx context.Context, e env, bc *byteCounter) (caller, error) {
	creds := credentials.NewTLS(e.ccfg.TLSConfig("localhost", "h2"))
	cc, err := grpc.NewClient("passthrough:///"+e.grpcAddr,
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
	if _, err := g.decide(ctx, []*wire.Task{{Id: 1, SlaMs: 10}}); err != nil {
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
