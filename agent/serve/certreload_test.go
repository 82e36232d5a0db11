package serve_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/internal/testenv"
	"github.com/triage-agent/triage/internal/testpki"
	"github.com/triage-agent/triage/wire"
)

// writePEM writes a certificate and its key as PEM files (by rename, as
// cert-manager and the kubelet replace files) and returns the fingerprint.
func writePEM(t *testing.T, certFile, keyFile string, c tls.Certificate) string {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	testenv.ReplaceFile(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}))
	testenv.ReplaceFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	return serve.Fingerprint(c.Certificate[0])
}

// seenFingerprint opens a new connection of the given kind and returns the
// fingerprint of the certificate the server presented.
func seenFingerprint(t *testing.T, addr string, tcp bool) string {
	t.Helper()
	tc := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}
	var der []byte
	if tcp {
		tc.NextProtos = []string{"h2"}
		c, err := tls.Dial("tcp", addr, tc)
		if err != nil {
			t.Fatalf("TCP handshake: %v", err)
		}
		der = c.ConnectionState().PeerCertificates[0].Raw
		c.Close()
	} else {
		tc.NextProtos = []string{wire.ALPNHTTP3}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := quic.DialAddr(ctx, addr, tc, nil)
		if err != nil {
			t.Fatalf("QUIC handshake: %v", err)
		}
		der = c.ConnectionState().TLS.PeerCertificates[0].Raw
		c.CloseWithError(0, "")
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// A certificate replaced on disk is what the next new connection, QUIC or
// TCP, is served; a connection already up keeps working; a broken pair is
// refused (reported) and the one in force stays.
func TestCertificateReloadedFromDisk(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	fp1 := writePEM(t, certFile, keyFile, mustSelfSigned(t))
	var mu sync.Mutex
	var reloads []error
	b, _ := goBackend()
	ts := startServer(t, serve.Config{CertFile: certFile, KeyFile: keyFile, OnTLSReload: func(err error) {
		mu.Lock()
		reloads = append(reloads, err)
		mu.Unlock()
	}}, b)
	if ts.Fingerprint() != fp1 {
		t.Fatalf("serving %s, want the file's %s", ts.Fingerprint(), fp1)
	}
	for _, tcp := range []bool{false, true} {
		if got := seenFingerprint(t, map[bool]string{false: ts.addr(), true: ts.TCPAddr().String()}[tcp], tcp); got != fp1 {
			t.Fatalf("tcp=%v: served %s, want %s", tcp, got, fp1)
		}
	}
	old := ts.dial(t, client.Config{PinSHA256: fp1, Logger: quietLogger()})

	fp2 := writePEM(t, certFile, keyFile, mustSelfSigned(t))
	for _, tcp := range []bool{false, true} {
		if got := seenFingerprint(t, map[bool]string{false: ts.addr(), true: ts.TCPAddr().String()}[tcp], tcp); got != fp2 {
			t.Fatalf("tcp=%v: after the replacement served %s, want the new %s", tcp, got, fp2)
		}
	}
	if ts.Fingerprint() != fp2 {
		t.Errorf("Fingerprint() %s, want %s", ts.Fingerprint(), fp2)
	}
	if _, err := old.Decide(t.Context(), sampleTasks(2)); err != nil {
		t.Fatalf("the connection made before the rotation: %v", err)
	}

	testenv.ReplaceFile(t, keyFile, []byte("not a key\n"))
	if got := seenFingerprint(t, ts.TCPAddr().String(), true); got != fp2 {
		t.Fatalf("after a broken key served %s, want the pair in force %s", got, fp2)
	}
	mu.Lock()
	n := len(reloads)
	last := reloads[n-1]
	mu.Unlock()
	if n != 2 || last == nil || !strings.Contains(last.Error(), "key") {
		t.Fatalf("reloads reported %d, last %v: want the good one, then the broken key", n, last)
	}
	// A broken pair is tried once per change, not per handshake.
	seenFingerprint(t, ts.addr(), false)
	mu.Lock()
	if len(reloads) != n {
		t.Errorf("broken pair retried without a change: %d reloads", len(reloads))
	}
	mu.Unlock()
	fp3 := writePEM(t, certFile, keyFile, mustSelfSigned(t))
	if got := seenFingerprint(t, ts.addr(), false); got != fp3 {
		t.Fatalf("a good pair after a broken one: served %s, want %s", got, fp3)
	}
	expectGoodClient(t, ts, client.Config{PinSHA256: fp3, Logger: quietLogger()})
}

// A client CA bundle replaced on disk decides the next handshake.
func TestClientCAReloadedFromDisk(t *testing.T) {
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	ca1, ca2 := testpki.NewCA(t, "first CA"), testpki.NewCA(t, "second CA")
	testenv.ReplaceFile(t, caFile, ca1.PEM())
	ts := startGoServer(t, serve.Config{ClientCAFile: caFile})
	dial := func(ca *testpki.CA) error {
		cfg := ts.clientConfig()
		cfg.Certificates = []tls.Certificate{ca.IssueClient(t, "upstream-service")}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := client.Dial(ctx, ts.addr(), cfg)
		if err == nil {
			_, err = c.Decide(ctx, sampleTasks(1))
			c.Close()
		}
		return err
	}
	if err := dial(ca1); err != nil {
		t.Fatalf("client of CA 1: %v", err)
	}
	if dial(ca2) == nil {
		t.Fatal("client of CA 2 served before the bundle named it")
	}
	testenv.ReplaceFile(t, caFile, ca2.PEM())
	if err := dial(ca2); err != nil {
		t.Fatalf("client of CA 2 after the bundle changed: %v", err)
	}
	if dial(ca1) == nil {
		t.Fatal("client of CA 1 still served after the bundle dropped it")
	}
}
