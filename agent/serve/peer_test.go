package serve_test

import (
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/triage-agent/triage/agent/serve"
)

// A real HTTP/3 client that no one here wrote: ngtcp2's gtlsclient (Debian
// ngtcp2-client, installed by scripts/install-build-deps.sh) posts JSON to
// /v1/decide through scripts/h3-peer-check.sh and gets decisions back.
func TestRealHTTP3Peer(t *testing.T) {
	if _, err := exec.LookPath("gtlsclient"); err != nil {
		t.Fatalf("gtlsclient not installed (scripts/install-build-deps.sh installs ngtcp2-client): %v", err)
	}
	b, _ := goBackend()
	ts := startServer(t, serve.Config{}, b)
	host, port, _ := net.SplitHostPort(ts.addr())
	out, err := exec.Command("../../scripts/h3-peer-check.sh", host, port).CombinedOutput()
	t.Logf("h3-peer-check.sh %s %s:\n%s", host, port, out)
	if err != nil {
		t.Fatalf("h3-peer-check.sh: %v", err)
	}
	if !strings.Contains(string(out), `"model":"`+b.State().GetModel()+`"`) {
		t.Errorf("answer does not name the model %q", b.State().GetModel())
	}
	if got := ts.Stats().Requests.Load(); got != 1 {
		t.Errorf("server counted %d decide requests, want 1", got)
	}
}
