package agent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

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
