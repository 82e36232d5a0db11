package serve_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/internal/testpki"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// tcpJSONClient speaks JSON to the endpoint's TCP port over HTTP/1.1 or
// HTTP/2 only (ALPN and the transport agree), pinning the certificate.
func tcpJSONClient(t *testing.T, ts *testServer, http2 bool) *http.Client {
	t.Helper()
	alpn := "http/1.1"
	if http2 {
		alpn = "h2"
	}
	tr := &http.Transport{TLSClientConfig: pinnedTLS(ts, alpn), Protocols: new(http.Protocols)}
	if http2 {
		tr.Protocols.SetHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func tcpURL(ts *testServer, path string) string { return "https://" + ts.TCPAddr().String() + path }

// The JSON API over HTTP/1.1 and HTTP/2 on the TCP port answers as it does
// on HTTP/3: string ids echoed, the same decisions, the same errors.
func TestTCPJSON(t *testing.T) {
	b, _ := goBackend()
	ts := startServer(t, serve.Config{MaxBatch: 4}, b)
	if ts.TCPAddr() == nil {
		t.Fatal("no TCP listener by default")
	}
	body := `{"tasks":[{"id":"7b0e2f8c-3c1d-4f0a-9e55-1d2c3b4a5f60","class":"interactive","sla_ms":20,"cost_ms":2},{"id":42,"sla_ms":900}]}`
	for _, h2 := range []bool{false, true} {
		hc := tcpJSONClient(t, ts, h2)
		resp, err := hc.Post(tcpURL(ts, "/v1/decide"), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("http2=%v: %v", h2, err)
		}
		wantProto := map[bool]int{false: 1, true: 2}[h2]
		if resp.ProtoMajor != wantProto {
			t.Errorf("http2=%v: answered over HTTP/%d", h2, resp.ProtoMajor)
		}
		var out wire.DecideResponseJSON
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(out.Decisions) != 2 {
			t.Fatalf("http2=%v: %d %+v %v", h2, resp.StatusCode, out, err)
		}
		if out.Decisions[0].ID != wire.StringID("7b0e2f8c-3c1d-4f0a-9e55-1d2c3b4a5f60") || out.Decisions[1].ID != wire.NumericID(42) {
			t.Errorf("http2=%v: ids not echoed as given: %+v", h2, out.Decisions)
		}
		want, _, _, _ := b.Decide(t.Context(), []*wire.Task{{TaskId: "x", Class: "interactive", SlaMs: 20, CostMs: 2}})
		if out.Decisions[0].Priority != want[0].GetPriority() || out.Decisions[0].Q[0] != want[0].GetQ()[0] {
			t.Errorf("http2=%v: decision %+v differs from the backend's %v", h2, out.Decisions[0], want[0])
		}
		// The same limits as every transport.
		resp, err = hc.Post(tcpURL(ts, "/v1/decide"), "application/json", strings.NewReader(`{"tasks":[{"id":1},{"id":2},{"id":3},{"id":4},{"id":5}]}`))
		if err != nil || resp.StatusCode != 413 {
			t.Fatalf("http2=%v: batch over the limit: %v %v", h2, resp.StatusCode, err)
		}
		resp.Body.Close()
		resp, err = hc.Post(tcpURL(ts, "/v1/outcomes"), "application/json", strings.NewReader(`{"outcomes":[{"id":"7b0e2f8c-3c1d-4f0a-9e55-1d2c3b4a5f60","latency_ms":3,"service_ms":2,"sla_met":true}]}`))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("http2=%v: outcomes: %v %v", h2, resp.StatusCode, err)
		}
		resp.Body.Close()
		resp, err = hc.Get(tcpURL(ts, "/v1/state"))
		var st wire.NodeStateJSON
		if err != nil || resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&st) != nil || st.Node != "test-node" {
			t.Fatalf("http2=%v: state: %v %v %+v", h2, resp.StatusCode, err, st)
		}
		resp.Body.Close()
	}
	if b.Outcomes() != 2 {
		t.Errorf("backend saw %d outcomes, want 2", b.Outcomes())
	}
	if got := ts.Stats().Requests.Load(); got != 2 {
		t.Errorf("%d decide requests counted, want 2", got)
	}
}

func TestTCPBearerToken(t *testing.T) {
	b, _ := goBackend()
	const token = "tcp-token-0123456789abcdef"
	ts := startServer(t, serve.Config{Tokens: []string{token}}, b)
	hc := tcpJSONClient(t, ts, true)
	post := func(auth string) int {
		req, _ := http.NewRequest("POST", tcpURL(ts, "/v1/decide"), strings.NewReader(`{"tasks":[{"id":"a"}]}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := post(""); c != 401 {
		t.Errorf("no token: %d", c)
	}
	if c := post("Bearer wrong-token-0123456789"); c != 401 {
		t.Errorf("wrong token: %d", c)
	}
	if c := post("Bearer " + token); c != 200 {
		t.Errorf("good token: %d", c)
	}
	g := grpcConn(t, ts, nil)
	_, err := grpcDecide(t.Context(), g, &wire.DecideRequest{Tasks: []*wire.Task{{TaskId: "a"}}})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("gRPC without token: %v", err)
	}
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token)
	if _, err := grpcDecide(ctx, g, &wire.DecideRequest{Tasks: []*wire.Task{{TaskId: "a"}}}); err != nil {
		t.Errorf("gRPC with the token: %v", err)
	}
}

func grpcConn(t testing.TB, ts *testServer, certs []tls.Certificate) *grpc.ClientConn {
	t.Helper()
	tc := pinnedTLS(ts, "h2")
	tc.Certificates = certs
	cc, err := grpc.NewClient("passthrough:///"+ts.TCPAddr().String(), grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func grpcDecide(ctx context.Context, cc *grpc.ClientConn, req *wire.DecideRequest) (*wire.DecideResponse, error) {
	out := new(wire.DecideResponse)
	return out, cc.Invoke(ctx, serve.GRPCDecideMethod, req, out)
}

// A gRPC client of the Decider service on the TCP port: decide with string
// and numeric ids, report outcomes, read the state; the limits and the id
// rules answer with their gRPC codes.
func TestGRPCDecider(t *testing.T) {
	b, d := goBackend()
	ts := startServer(t, serve.Config{MaxBatch: 8}, b)
	cc := grpcConn(t, ts, nil)
	ctx := callCtx(t)
	tasks := []*wire.Task{{TaskId: "req-9f8e", Class: "interactive", SlaMs: 20, CostMs: 2}, {Id: 77, Class: "batch", SlaMs: 5000, CostMs: 800}}
	resp, err := grpcDecide(ctx, cc, &wire.DecideRequest{ReqId: 31, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetReqId() != 31 || resp.GetModel() != d.Version() || len(resp.GetDecisions()) != 2 {
		t.Fatalf("answer %v", resp)
	}
	if wire.TaskID(resp.GetDecisions()[0]) != "req-9f8e" || resp.GetDecisions()[1].GetId() != 77 || resp.GetDecisions()[1].GetTaskId() != "" {
		t.Errorf("ids not echoed as given: %v", resp.GetDecisions())
	}
	want, _, _, _ := b.Decide(ctx, tasks)
	for i := range want {
		if resp.GetDecisions()[i].GetPriority() != want[i].GetPriority() || resp.GetDecisions()[i].GetQ()[4] != want[i].GetQ()[4] {
			t.Errorf("decision %d over gRPC %v, in process %v", i, resp.GetDecisions()[i], want[i])
		}
	}
	acc := new(wire.OutcomeAccepted)
	if err := cc.Invoke(ctx, serve.GRPCOutcomesMethod, &wire.OutcomeReport{ReqId: 4, Outcomes: []*wire.Outcome{{TaskId: "req-9f8e", LatencyMs: 4, ServiceMs: 2, SlaMet: true}}}, acc); err != nil || acc.GetAccepted() != 1 || acc.GetReqId() != 4 {
		t.Fatalf("ReportOutcomes: %v %v", acc, err)
	}
	st := new(wire.NodeState)
	if err := cc.Invoke(ctx, serve.GRPCStateMethod, &wire.StateRequest{}, st); err != nil || st.GetNode() != "test-node" || len(st.GetFeatures()) != policy.NumFeatures || !slices.Equal(st.GetFeatures(), b.State().GetFeatures()) {
		t.Fatalf("GetState: %v %v", st, err)
	}

	_, err = grpcDecide(ctx, cc, &wire.DecideRequest{Tasks: sampleTasks(9)})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "limit 8") {
		t.Errorf("9 tasks: %v", err)
	}
	_, err = grpcDecide(ctx, cc, &wire.DecideRequest{Tasks: []*wire.Task{{TaskId: strings.Repeat("x", 129)}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "at most 128") {
		t.Errorf("129-byte id: %v", err)
	}
	if _, err := grpcDecide(ctx, cc, &wire.DecideRequest{Tasks: []*wire.Task{{TaskId: strings.Repeat("x", 128)}}}); err != nil {
		t.Errorf("128-byte id: %v", err)
	}
}

// The native protocol and HTTP/3 take string ids too, and a too-long id
// fails its request only.
func TestStringIDsOnQUIC(t *testing.T) {
	ts := startGoServer(t, serve.Config{})
	c := ts.dial(t, ts.clientConfig())
	ctx := callCtx(t)
	resp, err := c.Decide(ctx, []*wire.Task{{TaskId: "job/2026-12-03/ünïcode", SlaMs: 20}, {Id: 5, SlaMs: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetDecisions()[0].GetTaskId() != "job/2026-12-03/ünïcode" || resp.GetDecisions()[1].GetId() != 5 {
		t.Fatalf("native ids: %v", resp.GetDecisions())
	}
	// The Go client refuses a long id before sending it ...
	if _, err := c.Decide(ctx, []*wire.Task{{TaskId: strings.Repeat("y", 200)}}); !errors.Is(err, wire.ErrBadTaskID) {
		t.Fatalf("the client sent a 200-byte id: %v", err)
	}
	if _, err := c.ReportOutcomes(ctx, []*wire.Outcome{{TaskId: strings.Repeat("y", 200)}}); !errors.Is(err, wire.ErrBadTaskID) {
		t.Fatalf("the client sent a 200-byte outcome id: %v", err)
	}
	// ... and the agent refuses one that another client sends, on that
	// request only: the same stream then serves the next one.
	rc := dialRaw(t, ts, "", nil)
	str, err := rc.conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fw, _ := wire.NewFrameWriter(str)
	fr, _ := wire.NewFrameReader(str, 0)
	for i, tasks := range [][]*wire.Task{{{TaskId: strings.Repeat("y", 200)}}, {{TaskId: "after-the-refusal"}}} {
		if err := fw.Write(&wire.Envelope{Body: &wire.Envelope_DecideRequest{DecideRequest: &wire.DecideRequest{ReqId: uint64(5 + i), Tasks: tasks}}}); err != nil {
			t.Fatal(err)
		}
	}
	var env wire.Envelope
	if err := fr.Read(&env); err != nil || env.GetError().GetCode() != uint32(wire.CodeInvalidArgument) || env.GetError().GetReqId() != 5 || !strings.Contains(env.GetError().GetReason(), "200 bytes, at most 128") {
		t.Fatalf("200-byte id on triage/1: %v %v", env.GetBody(), err)
	}
	if err := fr.Read(&env); err != nil || env.GetDecideResponse().GetReqId() != 6 || env.GetDecideResponse().GetDecisions()[0].GetTaskId() != "after-the-refusal" {
		t.Fatalf("the request after the refusal: %v %v", env.GetBody(), err)
	}
	if n, err := c.ReportOutcomes(ctx, []*wire.Outcome{{TaskId: "job/2026-12-03/ünïcode", LatencyMs: 3}}); err != nil || n != 1 {
		t.Fatalf("outcome by string id after a refused one: %d %v", n, err)
	}

	hc := h3Client(t, ts)
	status, body := doJSON(t, hc, "POST", "https://"+ts.addr()+"/v1/decide", `{"tasks":[{"id":"h3-0001","sla_ms":20},{"id":9,"sla_ms":20}]}`, nil)
	if status != 200 || !strings.Contains(string(body), `"id":"h3-0001"`) || !strings.Contains(string(body), `"id":9,`) {
		t.Fatalf("HTTP/3 with string ids: %d %s", status, body)
	}
}

// Client certificates are asked for on the TCP port as on QUIC.
func TestTCPMutualTLS(t *testing.T) {
	b, _ := goBackend()
	ca := testpki.NewCA(t, "triage test CA")
	ts := startServer(t, serve.Config{ClientCAs: ca.Pool}, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := grpcDecide(ctx, grpcConn(t, ts, nil), &wire.DecideRequest{Tasks: sampleTasks(1)}); err == nil {
		t.Fatal("gRPC without a client certificate was served")
	}
	if _, err := grpcDecide(ctx, grpcConn(t, ts, []tls.Certificate{ca.IssueClient(t, "upstream-service")}), &wire.DecideRequest{Tasks: sampleTasks(1)}); err != nil {
		t.Fatalf("gRPC with a client certificate: %v", err)
	}
}

// TCP connections count against the same per-address limit as QUIC ones.
func TestTCPConnectionLimitShared(t *testing.T) {
	ts := startGoServer(t, serve.Config{MaxConnsPerIP: 2})
	c := ts.dial(t, ts.clientConfig()) // one QUIC connection
	tc1, err := tls.Dial("tcp", ts.TCPAddr().String(), pinnedTLS(ts, "http/1.1"))
	if err != nil {
		t.Fatalf("second connection (TCP): %v", err)
	}
	defer tc1.Close()
	if err := ts.dialTCPAndRead(); err == nil {
		t.Fatal("third connection (TCP) was served")
	}
	if ts.Stats().RejectedConns.Load() == 0 {
		t.Error("refused TCP connection not counted")
	}
	tc1.Close()
	if _, err := c.Decide(t.Context(), sampleTasks(1)); err != nil {
		t.Fatalf("the QUIC client: %v", err)
	}
	// The TCP slot frees when the connection closes.
	eventually(t, 5*time.Second, "slot never freed", func() error {
		hc := tcpJSONClient(t, ts, false)
		resp, err := hc.Post(tcpURL(ts, "/v1/decide"), "application/json", strings.NewReader(`{"tasks":[{"id":"z"}]}`))
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
}

func TestTCPAddressRules(t *testing.T) {
	b, _ := goBackend()
	if _, err := serve.New(serve.Config{Addr: "127.0.0.1:0", TCPAddr: "0.0.0.0:0"}, b); !errors.Is(err, serve.ErrInsecureListen) {
		t.Errorf("TCP beyond loopback without auth: %v", err)
	}
	s, err := serve.New(serve.Config{Addr: "127.0.0.1:0", DisableTCP: true, Logger: quietLogger()}, b)
	if err != nil {
		t.Fatal(err)
	}
	if s.TCPAddr() != nil {
		t.Error("DisableTCP still listens")
	}
	s.Close()
	if _, err := serve.New(serve.Config{Addr: "127.0.0.1:0", TCPAddr: "nonsense"}, b); !errors.Is(err, serve.ErrBadConfig) {
		t.Errorf("bad TCP address: %v", err)
	}
}
