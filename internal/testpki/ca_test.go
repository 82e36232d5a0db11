package testpki

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
)

// A client certificate the CA issued verifies against its pool for client
// authentication, and not against another CA's; the PEM is the CA's.
func TestIssuedClientVerifies(t *testing.T) {
	ca, other := NewCA(t, "test CA"), NewCA(t, "other CA")
	leaf, err := x509.ParseCertificate(ca.IssueClient(t, "upstream-service").Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	opts := x509.VerifyOptions{Roots: ca.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := leaf.Verify(opts); err != nil {
		t.Fatalf("issued certificate does not verify: %v", err)
	}
	opts.Roots = other.Pool
	if _, err := leaf.Verify(opts); err == nil {
		t.Fatal("verified against another CA")
	}
	if leaf.Subject.CommonName != "upstream-service" || leaf.SerialNumber.Cmp(ca.Cert.SerialNumber) == 0 {
		t.Fatalf("subject %q, serial %v (CA's %v)", leaf.Subject.CommonName, leaf.SerialNumber, ca.Cert.SerialNumber)
	}
	b, _ := pem.Decode(ca.PEM())
	if b == nil || b.Type != "CERTIFICATE" || string(b.Bytes) != string(ca.Cert.Raw) {
		t.Fatal("PEM is not the CA's certificate")
	}
}
