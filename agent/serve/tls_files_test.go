package serve

import (
	"os"
	"path/filepath"
	"testing"
)

// What WriteSelfSigned writes is what LoadCertificate reads: the same
// certificate, private files.
func TestWriteSelfSignedReadsBack(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	cert, err := WriteSelfSigned(certFile, keyFile, "node-1", "10.0.0.7")
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadCertificate(certFile, keyFile)
	if err != nil {
		t.Fatalf("LoadCertificate of the written pair: %v", err)
	}
	if Fingerprint(got.Certificate[0]) != Fingerprint(cert.Certificate[0]) {
		t.Fatal("the certificate read back is not the one written")
	}
	for _, f := range []string{certFile, keyFile} {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v, want 0600", f, err, st.Mode().Perm())
		}
	}
	if _, err := WriteSelfSigned(filepath.Join(dir, "missing", "c.pem"), keyFile); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}
