package serve

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
)

// WriteSelfSigned makes a certificate as SelfSigned does and writes it and
// its key as PEM files (0600) that `triage agent --cert --key` and
// LoadCertificate read. It returns the certificate, for its fingerprint.
func WriteSelfSigned(certFile, keyFile string, hosts ...string) (tls.Certificate, error) {
	cert, err := SelfSigned(hosts...)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("making a certificate: %w", err)
	}
	key, ok := cert.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("self-signed key is a %T, want ECDSA", cert.PrivateKey)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("encoding the key: %w", err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		return tls.Certificate{}, fmt.Errorf("writing the certificate: %w", err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return tls.Certificate{}, fmt.Errorf("writing the key: %w", err)
	}
	return cert, nil
}
