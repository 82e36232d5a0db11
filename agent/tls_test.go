package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triage-agent/triage/client"

	"github.com/triage-agent/triage/agent/serve"
)

// The endpoint's certificate and client CA come through serve's loaders:
// good files serve, a file that cannot be used is ErrBadConfig with the
// loader's reason.
func TestTLSFilesLoadThroughServe(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, fp := writeCert(t, dir)
	ta := startAgent(t, Config{TLSCertFile: certFile, TLSKeyFile: keyFile, ClientCAFile: certFile, NoEBPF: true})
	if ta.Fingerprint() != fp {
		t.Fatalf("serving certificate %s, want the file's %s", ta.Fingerprint(), fp)
	}

	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := Config{QUICAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", ExperienceDir: "-", FlamegraphDir: "-", NoEBPF: true, Device: "cpu"}
	for name, c := range map[string]struct {
		cert, key, ca string
		serveBad      bool // serve.ErrBadConfig too: the loader's own verdict
	}{
		"client CA holds no PEM": {ca: notPEM, serveBad: true},
		"client CA missing":      {ca: filepath.Join(dir, "nonexistent.pem")},
		"certificate missing":    {cert: filepath.Join(dir, "nonexistent.pem"), key: keyFile},
		"key is not a key":       {cert: certFile, key: notPEM},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := base
			cfg.TLSCertFile, cfg.TLSKeyFile, cfg.ClientCAFile = c.cert, c.key, c.ca
			a, err := New(cfg)
			if err == nil {
				a.Close()
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrBadConfig) || errors.Is(err, serve.ErrBadConfig) != c.serveBad {
				t.Fatalf("err = %v: want ErrBadConfig (and serve.ErrBadConfig: %v)", err, c.serveBad)
			}
		})
	}
}

// The self-signed certificate names the addresses clients dial: the node's
// and the pod's (the DaemonSet passes them from the downward API).
func TestSelfSignedNamesNodeAddress(t *testing.T) {
	ta := startAgent(t, Config{CertHosts: []string{"10.20.30.40", "10.244.1.7", "node-7.example.internal"}, NoEBPF: true})
	leaf := ta.server.Certificate().Leaf
	var ips []string
	for _, ip := range leaf.IPAddresses {
		ips = append(ips, ip.String())
	}
	for _, want := range []string{"10.20.30.40", "10.244.1.7", "127.0.0.1"} {
		if !slices.Contains(ips, want) {
			t.Errorf("certificate IPs %v lack %s", ips, want)
		}
	}
	if !slices.Contains(leaf.DNSNames, "node-7.example.internal") || !slices.Contains(leaf.DNSNames, "localhost") {
		t.Errorf("certificate names %v", leaf.DNSNames)
	}
	if err := leaf.VerifyHostname("10.20.30.40"); err != nil {
		t.Errorf("a client dialling the node address would refuse it: %v", err)
	}
}

// The agent passes its certificate files to the endpoint for reloading: a
// replaced file is served and logged, a broken one counted and logged.
func TestAgentReloadsCertificateFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, fp1 := writeCert(t, dir)
	ta := startAgent(t, Config{TLSCertFile: certFile, TLSKeyFile: keyFile, NoEBPF: true})
	if ta.Fingerprint() != fp1 {
		t.Fatal("not serving the file's certificate")
	}
	next := t.TempDir()
	c2, k2, fp2 := writeCert(t, next)
	for src, dst := range map[string]string{c2: certFile, k2: keyFile} {
		b, _ := os.ReadFile(src)
		tmp := dst + ".tmp"
		os.WriteFile(tmp, b, 0o600)
		if err := os.Rename(tmp, dst); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := client.Dial(t.Context(), ta.QUICAddr().String(), client.Config{PinSHA256: fp2})
	if err != nil {
		t.Fatalf("a new connection pinned to the new certificate: %v", err)
	}
	cl.Close()
	if !strings.Contains(ta.logs.String(), "TLS files reloaded") {
		t.Error("the reload is not logged")
	}
	// A handshake that landed between the two renames above (a retried
	// one, on a loaded machine) saw a certificate without its key and was
	// rightly refused: the broken key below is counted from here.
	before := ta.metric(t, "triage_tls_reload_failures_total")
	os.WriteFile(keyFile+".tmp", []byte("garbage"), 0o600)
	os.Rename(keyFile+".tmp", keyFile)
	if cl, err = client.Dial(t.Context(), ta.QUICAddr().String(), client.Config{PinSHA256: fp2}); err != nil {
		t.Fatalf("after a broken key the certificate in force must stay: %v", err)
	}
	cl.Close()
	if v := ta.metric(t, "triage_tls_reload_failures_total"); v != before+1 {
		t.Errorf("triage_tls_reload_failures_total = %v after a broken key, want %v", v, before+1)
	}
}
