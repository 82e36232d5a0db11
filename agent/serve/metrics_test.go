package serve_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/wire"
)

// One decide on each protocol is counted once, under its own protocol
// label, by the one call path; a refused call under its code.
func TestMetricsByProtocol(t *testing.T) {
	ts := startGoServer(t, serve.Config{MaxBatch: 2})
	reg := prometheus.NewRegistry()
	reg.MustRegister(ts.Collectors()...)
	ctx := callCtx(t)

	if _, err := ts.dial(t, ts.clientConfig()).Decide(ctx, []*wire.Task{{TaskId: "n"}}); err != nil {
		t.Fatal(err)
	}
	if status, body := doJSON(t, h3Client(t, ts), "POST", "https://"+ts.addr()+"/v1/decide", `{"tasks":[{"id":"h"}]}`, nil); status != 200 {
		t.Fatalf("h3: %d %s", status, body)
	}
	for _, h2 := range []bool{false, true} {
		resp, err := tcpJSONClient(t, ts, h2).Post(tcpURL(ts, "/v1/decide"), "application/json", strings.NewReader(`{"tasks":[{"id":"t"}]}`))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("http2=%v: %v", h2, err)
		}
		resp.Body.Close()
	}
	cc := grpcConn(t, ts, nil)
	if _, err := grpcDecide(ctx, cc, &wire.DecideRequest{Tasks: []*wire.Task{{TaskId: "g"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := grpcDecide(ctx, cc, &wire.DecideRequest{Tasks: sampleTasks(3)}); err == nil {
		t.Fatal("batch over the limit served")
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	durations := map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			switch mf.GetName() {
			case "triage_endpoint_requests_total":
				got[l["protocol"]+"/"+l["method"]+"/"+l["code"]] = m.GetCounter().GetValue()
			case "triage_endpoint_request_duration_seconds":
				durations[l["protocol"]+"/"+l["method"]] = m.GetHistogram().GetSampleCount()
			case "triage_endpoint_decisions_total":
				got["decisions/"+l["protocol"]] = m.GetCounter().GetValue()
			}
		}
	}
	for _, p := range []string{"native", "h3", "http1", "http2", "grpc"} {
		if got[p+"/decide/ok"] != 1 || got["decisions/"+p] != 1 {
			t.Errorf("%s: %v decide calls, %v decisions counted; want 1 and 1", p, got[p+"/decide/ok"], got["decisions/"+p])
		}
		if want := uint64(1) + map[bool]uint64{true: 1}[p == "grpc"]; durations[p+"/decide"] != want {
			t.Errorf("%s: %d timed calls, want %d", p, durations[p+"/decide"], want)
		}
	}
	if got["grpc/decide/batch_too_large"] != 1 {
		t.Errorf("refused gRPC call not counted by its code: %v", got)
	}
}
