package agent

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/access"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/internal/testpki"
	"github.com/triage-agent/triage/wire"
)

func (ta *testAgent) do(t *testing.T, method, path, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, ta.url(path), nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := ta.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// With a token, every admin endpoint but /metrics, /healthz and /readyz
// answers 401 without it and works with it; with AdminAuthAll those three
// need it too.
func TestAdminTokenProtectsEveryEndpoint(t *testing.T) {
	dir := t.TempDir()
	cand := filepath.Join(dir, "candidate.onnx")
	writeModel(t, cand, alwaysMLP(2), "candidate-7")
	const tok = "admin-token-0123456789abcdef"
	ta := startAgent(t, Config{ShadowModelPath: cand, Tokens: []string{tok}, NoEBPF: true})
	for _, c := range []struct{ method, path string }{
		{"POST", "/admin/promote"}, {"GET", "/debug/pprof/"}, {"GET", "/debug/pprof/cmdline"},
		{"GET", "/admin/shadow"}, {"GET", "/flamegraphs"}, {"GET", "/"},
	} {
		code, body := ta.do(t, c.method, c.path, "")
		if code != http.StatusUnauthorized || !strings.Contains(body, "Bearer") {
			t.Errorf("%s %s without the token: %d %s, want 401", c.method, c.path, code, body)
		}
		if code, _ := ta.do(t, c.method, c.path, "wrong-token-0123456789abc"); code != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token: %d, want 401", c.method, c.path, code)
		}
	}
	if code, body := ta.do(t, "GET", "/debug/pprof/", tok); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ with the token: %d %.80s", code, body)
	}
	if code, body := ta.do(t, "POST", "/admin/promote", tok); code != 200 || !strings.Contains(body, "candidate-7") {
		t.Errorf("promote with the token: %d %s", code, body)
	}
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		if code, _ := ta.do(t, "GET", p, ""); code != 200 {
			t.Errorf("%s without the token: %d, want 200 (Prometheus and the kubelet call it)", p, code)
		}
	}

	all := startAgent(t, Config{Tokens: []string{tok}, AdminAuthAll: true, NoEBPF: true})
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		if code, _ := all.do(t, "GET", p, ""); code != http.StatusUnauthorized {
			t.Errorf("AdminAuthAll: %s without the token: %d, want 401", p, code)
		}
		if code, _ := all.do(t, "GET", p, tok); code != 200 {
			t.Errorf("AdminAuthAll: %s with the token: %d", p, code)
		}
	}
}

// The rule itself, for peers a test cannot easily be: without credentials
// only loopback peers reach the protected endpoints; the open ones answer
// everyone.
func TestAdminLoopbackRule(t *testing.T) {
	none, _ := access.NewTokens(nil, "")
	a := &Agent{auth: none}
	h := a.adminAccess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) }))
	for _, c := range []struct {
		peer, path string
		want       int
	}{
		{"127.0.0.1:40000", "/admin/promote", 299},
		{"[::1]:40000", "/debug/pprof/", 299},
		{"10.1.2.3:40000", "/admin/promote", http.StatusForbidden},
		{"[fd00::5]:40000", "/flamegraphs", http.StatusForbidden},
		{"[::ffff:192.168.0.9]:1", "/debug/pprof/profile", http.StatusForbidden},
		{"10.1.2.3:40000", "/metrics", 299},
		{"10.1.2.3:40000", "/healthz", 299},
		{"10.1.2.3:40000", "/readyz", 299},
	} {
		req := httptest.NewRequest("GET", c.path, nil)
		req.RemoteAddr = c.peer
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s from %s: %d, want %d", c.path, c.peer, rec.Code, c.want)
		}
		if rec.Code == http.StatusForbidden && !strings.Contains(rec.Body.String(), "loopback") {
			t.Errorf("403 body does not say why: %s", rec.Body.String())
		}
	}
	// With a token configured, loopback is no credential.
	tok, _ := access.NewTokens([]string{"loopback-is-not-a-token-1"}, "")
	a = &Agent{auth: tok}
	h = a.adminAccess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) }))
	req := httptest.NewRequest("POST", "/admin/promote", nil)
	req.RemoteAddr = "127.0.0.1:5"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("loopback without the token: %d, want 401", rec.Code)
	}
}

// A token file rotated on disk is in force on the endpoint and the admin
// port without a restart, and the old token stops working.
func TestTokenFileRotation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	const tok1, tok2 = "first-token-0123456789abcdef", "second-token-0123456789abcd"
	if err := os.WriteFile(file, []byte(tok1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ta := startAgent(t, Config{TokenFile: file, NoEBPF: true})
	ta.auth.Recheck = time.Millisecond
	dialWith := func(tok string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := client.Dial(ctx, ta.QUICAddr().String(), client.Config{PinSHA256: ta.Fingerprint(), Token: tok})
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Decide(ctx, []*wire.Task{{TaskId: "rot-1", SlaMs: 50}})
		return err
	}
	if err := dialWith(tok1); err != nil {
		t.Fatalf("first token: %v", err)
	}
	if code, _ := ta.do(t, "GET", "/debug/pprof/", tok1); code != 200 {
		t.Fatalf("admin with the first token: %d", code)
	}
	tmp := file + ".new"
	os.WriteFile(tmp, []byte(tok2+"\n"), 0o600)
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if code, _ := ta.do(t, "GET", "/debug/pprof/", tok1); code != http.StatusUnauthorized {
		t.Errorf("admin with the old token after rotation: %d, want 401", code)
	}
	if code, _ := ta.do(t, "GET", "/debug/pprof/", tok2); code != 200 {
		t.Errorf("admin with the new token: %d", code)
	}
	if err := dialWith(tok1); err == nil {
		t.Error("endpoint still takes the old token")
	}
	if err := dialWith(tok2); err != nil {
		t.Errorf("endpoint with the new token: %v", err)
	}
	// A broken file is refused, counted, and the new token stays.
	os.WriteFile(tmp, []byte("short\n"), 0o600)
	os.Rename(tmp, file)
	time.Sleep(5 * time.Millisecond)
	if code, _ := ta.do(t, "GET", "/debug/pprof/", tok2); code != 200 {
		t.Errorf("after a broken token file: %d, want the token in force to work", code)
	}
	if v := ta.metric(t, "triage_token_reload_failures_total"); v != 1 {
		t.Errorf("triage_token_reload_failures_total = %v, want 1", v)
	}
	if !strings.Contains(ta.logs.String(), "token file refused") {
		t.Error("the refusal is not logged")
	}
}

// With --admin-tls and --client-ca the admin port speaks TLS with the
// endpoint's certificate, and a client certificate of the CA is a
// credential; without one the protected endpoints answer 401, the open
// ones 200.
func TestAdminTLSWithClientCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := writeCert(t, dir)
	caFile, clientCert := writeClientCA(t, dir)
	ta := startAgent(t, Config{TLSCertFile: certFile, TLSKeyFile: keyFile, ClientCAFile: caFile, AdminTLS: true, NoEBPF: true})
	if !strings.HasPrefix(ta.url("/"), "https://") {
		t.Fatal("admin port not on TLS")
	}
	if code, _ := ta.do(t, "GET", "/healthz", ""); code != 200 {
		t.Errorf("/healthz over TLS without a client certificate: %d", code)
	}
	if code, body := ta.do(t, "GET", "/debug/pprof/", ""); code != http.StatusUnauthorized || !strings.Contains(body, "client certificate") {
		t.Errorf("/debug/pprof/ without a client certificate: %d %s, want 401", code, body)
	}
	pin := client.Config{PinSHA256: ta.Fingerprint(), Certificates: []tls.Certificate{clientCert}}
	ta.hc = &http.Client{Transport: &http.Transport{TLSClientConfig: pin.TLSConfig("localhost", "http/1.1")}}
	if code, _ := ta.do(t, "GET", "/debug/pprof/", ""); code != 200 {
		t.Errorf("/debug/pprof/ with a client certificate of the CA: %d, want 200", code)
	}
}

// writeClientCA writes a CA's PEM to dir and returns its path and a client
// certificate it signed.
func writeClientCA(t *testing.T, dir string) (string, tls.Certificate) {
	t.Helper()
	ca := testpki.NewCA(t, "admin test CA")
	path := filepath.Join(dir, "client-ca.pem")
	if err := os.WriteFile(path, ca.PEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, ca.IssueClient(t, "operator")
}
