package serve_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/quic-go/quic-go/http3"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

func h3Client(t *testing.T, ts *testServer) *http.Client {
	tr := &http3.Transport{TLSClientConfig: pinnedTLS(ts, wire.ALPNHTTP3)}
	t.Cleanup(func() { tr.Close() })
	return &http.Client{Transport: tr}
}

func doJSON(t *testing.T, hc *http.Client, method, url, body string, hdr map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", method, url, ct)
	}
	return resp.StatusCode, b
}

func TestHTTP3API(t *testing.T) {
	b, d := goBackend()
	ts := startServer(t, serve.Config{MaxBatch: 16, MaxHTTPBodyBytes: 4096}, b)
	hc := h3Client(t, ts)
	base := "https://" + ts.addr()

	status, body := doJSON(t, hc, "POST", base+"/v1/decide",
		`{"tasks":[{"id":1,"class":"interactive","sla_ms":20,"cost_ms":2,"tenant":"a"},{"id":2,"class":"batch","sla_ms":5000,"cost_ms":800,"tenant":"b"}]}`, nil)
	if status != 200 {
		t.Fatalf("decide: %d %s", status, body)
	}
	var resp wire.DecideResponseJSON
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil {
		t.Fatalf("decide answer %s: %v", body, err)
	}
	if len(resp.Decisions) != 2 || resp.Decisions[0].ID != wire.NumericID(1) || resp.Decisions[1].ID != wire.NumericID(2) || resp.Model != d.Version() || resp.StateEpoch != 1 {
		t.Fatalf("decide answer %s", body)
	}
	one, err := wire.TasksFromJSON([]wire.TaskJSON{{ID: wire.NumericID(1), Class: "interactive", SLAMs: 20, CostMs: 2, Tenant: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	want, _, _, _ := b.Decide(t.Context(), one)
	if resp.Decisions[0].Priority != want[0].GetPriority() || resp.Decisions[0].Q[0] != want[0].GetQ()[0] {
		t.Errorf("HTTP/3 decision %+v differs from the backend's %v", resp.Decisions[0], want[0])
	}

	status, body = doJSON(t, hc, "POST", base+"/v1/outcomes", `{"outcomes":[{"id":1,"latency_ms":3.2,"sla_met":true}]}`, nil)
	if status != 200 || !strings.Contains(string(body), `"accepted":1`) || b.Outcomes() != 1 {
		t.Fatalf("outcomes: %d %s (backend has %d)", status, body, b.Outcomes())
	}

	status, body = doJSON(t, hc, "GET", base+"/v1/state", "", nil)
	var st wire.NodeStateJSON
	if status != 200 || json.Unmarshal(body, &st) != nil || st.Epoch != 1 || len(st.Features) != policy.NumFeatures || !slices.Equal(st.Features, b.State().GetFeatures()) || len(st.Sources) != policy.NumFeatures || st.Node != "test-node" {
		t.Fatalf("state: %d %s", status, body)
	}

	bad := []struct {
		name, method, path, body string
		status                   int
		why                      string
	}{
		{"not JSON", "POST", "/v1/decide", "tasks=1", 400, "invalid JSON"},
		{"unknown field", "POST", "/v1/decide", `{"tasks":[{"id":1,"prio":4}]}`, 400, "unknown field"},
		{"trailing data", "POST", "/v1/decide", `{"tasks":[{"id":1}]} {"tasks":[]}`, 400, "trailing"},
		{"no tasks", "POST", "/v1/decide", `{"tasks":[]}`, 400, "no tasks"},
		{"wrong type", "POST", "/v1/decide", `{"tasks":[{"id":true}]}`, 400, "invalid JSON"},
		{"empty id", "POST", "/v1/decide", `{"tasks":[{"id":""}]}`, 400, "bad task id: empty"},
		{"id too long", "POST", "/v1/decide", `{"tasks":[{"id":"` + strings.Repeat("x", 129) + `"}]}`, 400, "129 bytes, at most 128"},
		{"no id", "POST", "/v1/decide", `{"tasks":[{"sla_ms":5}]}`, 400, "task 0 has no id"},
		{"outcome without id", "POST", "/v1/outcomes", `{"outcomes":[{"latency_ms":5}]}`, 400, "outcome 0 has no id"},
		{"batch too large", "POST", "/v1/decide", `{"tasks":[` + strings.Repeat(`{"id":1},`, 16) + `{"id":2}]}`, 413, "limit 16"},
		{"body too large", "POST", "/v1/decide", `{"tasks":[{"id":1,"class":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "larger than 4096"},
		{"wrong method", "GET", "/v1/decide", "", 405, ""},
		{"unknown path", "GET", "/v2/whatever", "", 404, "no route"},
	}
	for _, tc := range bad {
		status, body := doJSON(t, hc, tc.method, base+tc.path, tc.body, nil)
		var e wire.ErrorJSON
		if status != tc.status {
			t.Errorf("%s: status %d %s, want %d", tc.name, status, body, tc.status)
			continue
		}
		if tc.why != "" && (json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, tc.why)) {
			t.Errorf("%s: body %s does not say %q", tc.name, body, tc.why)
		}
	}
	// And it still serves.
	if status, body := doJSON(t, hc, "POST", base+"/v1/decide", `{"tasks":[{"id":9}]}`, nil); status != 200 {
		t.Fatalf("after bad requests: %d %s", status, body)
	}
}

func TestHTTP3BearerToken(t *testing.T) {
	b, _ := goBackend()
	const token = "h3-token-0123456789abcdef"
	ts := startServer(t, serve.Config{Tokens: []string{token}}, b)
	hc := h3Client(t, ts)
	url := "https://" + ts.addr() + "/v1/decide"
	body := `{"tasks":[{"id":1,"sla_ms":10}]}`
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer nope"}, {"Authorization": token}} {
		status, resp := doJSON(t, hc, "POST", url, body, h)
		if status != 401 || !strings.Contains(string(resp), "bearer token") {
			t.Errorf("header %v: %d %s, want 401 naming the token", h, status, resp)
		}
	}
	if status, resp := doJSON(t, hc, "POST", url, body, map[string]string{"Authorization": "Bearer " + token}); status != 200 {
		t.Fatalf("good token: %d %s", status, resp)
	}
}
