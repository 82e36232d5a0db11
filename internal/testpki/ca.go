// Package testpki is a throwaway certificate authority for the tests of
// mutual TLS: the endpoint's client CAs and the admin port's client
// certificates. Only tests import it.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// CA is a certificate authority valid for an hour either side of now.
type CA struct {
	Cert *x509.Certificate
	Pool *x509.CertPool // holds Cert alone, for a server's ClientCAs
	key  *ecdsa.PrivateKey
}

// NewCA makes a CA named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	tmpl := &x509.Certificate{
		Subject: pkix.Name{CommonName: name},
		IsCA:    true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, key := sign(t, tmpl, nil, nil)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Cert: cert, Pool: pool, key: key}
}

// PEM is the CA's certificate as a PEM block, as --client-ca reads it.
func (ca *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// IssueClient makes a client certificate for name, signed by the CA.
func (ca *CA) IssueClient(t testing.TB, name string) tls.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		Subject:  pkix.Name{CommonName: name},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, key := sign(t, tmpl, ca.Cert, ca.key)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// sign makes a fresh P-256 key and the certificate of tmpl for it, signed
// by parent (nil: self-signed), with a random serial and an hour of
// validity either side of now.
func sign(t testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 63)); err != nil {
		t.Fatal(err)
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}
