package client

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/triage-agent/triage/wire"
)

func TestPinValidation(t *testing.T) {
	for _, bad := range []string{"abc", strings.Repeat("z", 64), strings.Repeat("a", 63)} {
		if _, err := (Config{PinSHA256: bad}).withDefaults(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("pin %q: %v, want ErrBadConfig", bad, err)
		}
	}
	colons := strings.TrimSuffix(strings.Repeat("AB:", 32), ":")
	c, err := Config{PinSHA256: colons}.withDefaults()
	if err != nil || c.PinSHA256 != strings.Repeat("ab", 32) {
		t.Fatalf("colon form: %q %v", c.PinSHA256, err)
	}
}

func TestPinnedVerify(t *testing.T) {
	der := []byte("not really a certificate, but hashed all the same")
	sum := sha256.Sum256(der)
	cfg, err := Config{PinSHA256: hex.EncodeToString(sum[:])}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.TLSConfig("localhost", wire.ALPNNative)
	if !tc.InsecureSkipVerify || tc.VerifyPeerCertificate == nil || tc.NextProtos[0] != wire.ALPNNative {
		t.Fatalf("pinned config: %+v", tc)
	}
	if err := tc.VerifyPeerCertificate([][]byte{der}, nil); err != nil {
		t.Errorf("matching certificate refused: %v", err)
	}
	if err := tc.VerifyPeerCertificate([][]byte{append(der, 0)}, nil); err == nil || !strings.Contains(err.Error(), "does not match the pin") {
		t.Errorf("other certificate: %v", err)
	}
	if err := tc.VerifyPeerCertificate(nil, nil); err == nil {
		t.Error("no certificate accepted")
	}
}

func TestServerErrorIs(t *testing.T) {
	var err error = &ServerError{Code: wire.CodeUnauthenticated, Reason: "bad token"}
	if !errors.Is(err, ErrUnauthenticated) {
		t.Error("CodeUnauthenticated is not ErrUnauthenticated")
	}
	if errors.Is(&ServerError{Code: wire.CodeMalformed}, ErrUnauthenticated) {
		t.Error("CodeMalformed is ErrUnauthenticated")
	}
	if !strings.Contains(err.Error(), "unauthenticated: bad token") {
		t.Errorf("message %q", err)
	}
}

func TestDefaults(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Streams != 4 || c.MaxFrameBytes != wire.DefaultMaxFrame || c.HedgeAfter != 0 || c.DatagramAfter <= 0 {
		t.Fatalf("defaults %+v", c)
	}
}
