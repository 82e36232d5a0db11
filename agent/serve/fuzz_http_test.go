package serve_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/wire"
)

// FuzzJSONBodies: the bodies of POST /v1/decide and POST /v1/outcomes, sent
// to a real endpoint over HTTP/1.1 on its TCP port (the JSON handler every
// HTTP transport shares). Whatever the body, the answer is 200 with a
// well-formed answer (one decision per task of the request, with its id as
// given; an accepted count) or a 4xx with {"error": "..."}: never a 5xx,
// never a dropped connection.
func FuzzJSONBodies(f *testing.F) {
	for _, s := range []string{
		`{"tasks":[{"id":"task-1","class":"scoring","sla_ms":50,"cost_ms":5,"tenant":"shop"}]}`,
		`{"tasks":[{"id":7,"class":"batch","sla_ms":2000}]}`,
		`{"tasks":[]}`,
		`{"tasks":[{"id":"x"}],"extra":1}`,
		`{"tasks":[{"id":"a"},{"id":"a"}]}`,
		`{"outcomes":[{"id":"task-1","latency_ms":30,"service_ms":15,"sla_met":true}]}`,
		`{"outcomes":[{"id":1,"latency_ms":-1}]}`,
		`{"tasks":[{"id":"a"}]} trailing`,
		`[`,
	} {
		f.Add([]byte(s), len(s) > 2 && s[2] == 't')
	}
	b, _ := goBackend()
	s, err := serve.New(serve.Config{Addr: "127.0.0.1:0", Logger: quietLogger()}, b)
	if err != nil {
		f.Fatal(err)
	}
	go s.Serve()
	f.Cleanup(func() { s.Close() })
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: (&testServer{Server: s}).clientConfig().TLSConfig("localhost", "http/1.1")}}
	base := "https://" + s.TCPAddr().String()

	f.Fuzz(func(t *testing.T, body []byte, decide bool) {
		path := "/v1/outcomes"
		if decide {
			path = "/v1/decide"
		}
		resp, err := hc.Post(base+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		switch {
		case resp.StatusCode == http.StatusOK:
		case resp.StatusCode >= 400 && resp.StatusCode < 500:
			var e wire.ErrorJSON
			if err := json.Unmarshal(answer, &e); err != nil || e.Error == "" {
				t.Fatalf("%d with %q: want {\"error\": \"...\"}", resp.StatusCode, answer)
			}
			return
		default:
			t.Fatalf("status %d for %q: %s", resp.StatusCode, body, answer)
		}
		if !decide {
			var acc wire.OutcomesAcceptedJSON
			if err := json.Unmarshal(answer, &acc); err != nil || acc.Accepted < 0 {
				t.Fatalf("outcomes answer %q: %v", answer, err)
			}
			return
		}
		var req wire.DecideRequestJSON
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("200 for a body that is not a request: %q", body)
		}
		var got wire.DecideResponseJSON
		if err := json.Unmarshal(answer, &got); err != nil {
			t.Fatalf("decide answer %q: %v", answer, err)
		}
		if len(got.Decisions) != len(req.Tasks) {
			t.Fatalf("%d decisions for %d tasks", len(got.Decisions), len(req.Tasks))
		}
		for i, d := range got.Decisions {
			if d.ID != req.Tasks[i].ID || d.Priority > 4 || len(d.Q) != 5 {
				t.Fatalf("decision %d %+v for task %+v", i, d, req.Tasks[i])
			}
		}
	})
}
