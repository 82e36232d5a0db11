package agent

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/triage-agent/triage/internal/testenv"
)

// netnsPeer is a network namespace joined to this one by a veth pair: a
// real peer at another address, as a pod on the node's network would be.
type netnsPeer struct {
	name     string
	hostIP   string // this namespace's end
	remoteIP string // the namespace's end
}

func newNetnsPeer(t *testing.T) *netnsPeer {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating a network namespace and a veth pair needs root (TestAdminLoopbackRule covers the rule unprivileged)")
	}
	for _, tool := range []string{"ip", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(t, tool+" not installed (Debian packages iproute2, curl)")
		}
	}
	id := os.Getpid() % 200
	p := &netnsPeer{name: fmt.Sprintf("triage-t%d", os.Getpid()), hostIP: fmt.Sprintf("10.213.%d.1", id), remoteIP: fmt.Sprintf("10.213.%d.2", id)}
	hostIf, peerIf := fmt.Sprintf("trh%d", os.Getpid()%100000), fmt.Sprintf("trp%d", os.Getpid()%100000)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", p.name)
	// Deleting the namespace destroys the veth pair with it.
	t.Cleanup(func() { exec.Command("ip", "netns", "del", p.name).Run() })
	run("link", "add", hostIf, "type", "veth", "peer", "name", peerIf)
	run("link", "set", peerIf, "netns", p.name)
	run("addr", "add", p.hostIP+"/30", "dev", hostIf)
	run("link", "set", hostIf, "up")
	run("-n", p.name, "addr", "add", p.remoteIP+"/30", "dev", peerIf)
	run("-n", p.name, "link", "set", peerIf, "up")
	run("-n", p.name, "link", "set", "lo", "up")
	return p
}

// curl runs curl inside the namespace and returns the HTTP status.
func (p *netnsPeer) curl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", p.name, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("curl %v in %s: %v\n%s", args, p.name, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Without a token the admin port answers a peer in another network
// namespace 403 on its protected endpoints (and 200 on the open ones),
// while a loopback peer is served: a real veth pair, a real TCP peer.
func TestAdminRefusesNonLoopbackPeer(t *testing.T) {
	peer := newNetnsPeer(t)
	ta := startAgent(t, Config{AdminAddr: "0.0.0.0:0", NoEBPF: true})
	_, port, _ := net.SplitHostPort(ta.AdminAddr().String())
	remote := "http://" + net.JoinHostPort(peer.hostIP, port)
	if got := peer.curl(t, remote+"/debug/pprof/"); got != "403" {
		t.Errorf("/debug/pprof/ from %s: %s, want 403", peer.remoteIP, got)
	}
	if got := peer.curl(t, "-X", "POST", remote+"/admin/promote"); got != "403" {
		t.Errorf("POST /admin/promote from %s: %s, want 403", peer.remoteIP, got)
	}
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		if got := peer.curl(t, remote+p); got != "200" {
			t.Errorf("%s from %s: %s, want 200", p, peer.remoteIP, got)
		}
	}
	if code, _ := ta.get(t, "/debug/pprof/"); code != 200 {
		t.Errorf("/debug/pprof/ from loopback: %d, want 200", code)
	}
	// With a token the same peer is served once it presents it.
	const tok = "netns-token-0123456789abcdef"
	tt := startAgent(t, Config{AdminAddr: "0.0.0.0:0", Tokens: []string{tok}, NoEBPF: true})
	_, port, _ = net.SplitHostPort(tt.AdminAddr().String())
	remote = "http://" + net.JoinHostPort(peer.hostIP, port)
	if got := peer.curl(t, remote+"/debug/pprof/"); got != "401" {
		t.Errorf("with a token configured, no token from %s: %s, want 401", peer.remoteIP, got)
	}
	if got := peer.curl(t, "-H", "Authorization: Bearer "+tok, remote+"/debug/pprof/"); got != "200" {
		t.Errorf("with the token from %s: %s, want 200", peer.remoteIP, got)
	}
}
