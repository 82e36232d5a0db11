package serve

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/triage-agent/triage/agent/access"
)

// certStore is the endpoint's TLS identity, shared by the QUIC and TCP
// listeners (and the agent's admin port when it serves TLS): the server
// certificate and the client CA bundle. When they come from files, every
// new handshake looks at the files (one stat each, a few microseconds
// against a handshake's hundreds) and a changed file is loaded before that
// handshake, so a rotated certificate (cert-manager, a Secret update) is
// served to the next new connection without a restart; connections already
// up keep the one they negotiated. A pair that cannot be loaded (a
// certificate written before its key, garbage) is refused and the one in
// force stays; it is tried again when a file changes again.
type certStore struct {
	certFile, keyFile, caFile string
	onReload                  func(error)

	cur atomic.Pointer[tlsIdentity]

	mu                     sync.Mutex // one reload at a time
	certSig, keySig, caSig access.FileSig
}

// tlsIdentity is one loaded certificate and client CA bundle.
type tlsIdentity struct {
	cert *tls.Certificate
	fp   string         // Fingerprint of the leaf
	cas  *x509.CertPool // nil: no client certificate asked for
}

// newCertStore loads the identity of cfg: the files when given, else the
// fixed certificate and pool, else a self-signed certificate for cfg's
// host names.
func newCertStore(cfg *Config) (*certStore, error) {
	cs := &certStore{certFile: cfg.CertFile, keyFile: cfg.KeyFile, caFile: cfg.ClientCAFile, onReload: cfg.OnTLSReload}
	if (cs.certFile == "") != (cs.keyFile == "") {
		return nil, fmt.Errorf("%w: a certificate file and a key file go together", ErrBadConfig)
	}
	id := &tlsIdentity{cert: cfg.Certificate, cas: cfg.ClientCAs}
	if cs.certFile != "" {
		if err := cs.loadCert(id); err != nil {
			return nil, err
		}
	}
	if cs.caFile != "" {
		if err := cs.loadCAs(id); err != nil {
			return nil, err
		}
	}
	if id.cert == nil {
		c, err := SelfSigned(cfg.CertHosts...)
		if err != nil {
			return nil, fmt.Errorf("self-signed certificate: %w", err)
		}
		id.cert = &c
	}
	if len(id.cert.Certificate) == 0 {
		return nil, fmt.Errorf("%w: certificate has no DER", ErrBadConfig)
	}
	id.fp = Fingerprint(id.cert.Certificate[0])
	cs.cur.Store(id)
	return cs, nil
}

func (cs *certStore) loadCert(id *tlsIdentity) error {
	certSig, err1 := access.StatFile(cs.certFile)
	keySig, err2 := access.StatFile(cs.keyFile)
	c, err := LoadCertificate(cs.certFile, cs.keyFile)
	if err != nil {
		return err
	}
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("loading TLS certificate: %w", err)
	}
	id.cert, cs.certSig, cs.keySig = c, certSig, keySig
	return nil
}

func (cs *certStore) loadCAs(id *tlsIdentity) error {
	sig, err := access.StatFile(cs.caFile)
	if err != nil {
		return fmt.Errorf("reading client CA bundle: %w", err)
	}
	pool, err := LoadClientCAs(cs.caFile)
	if err != nil {
		return err
	}
	id.cas, cs.caSig = pool, sig
	return nil
}

// current returns the identity in force, loading changed files first.
func (cs *certStore) current() *tlsIdentity {
	if cs.certFile == "" && cs.caFile == "" {
		return cs.cur.Load()
	}
	id, tried, err := cs.reload()
	// Told outside the lock: the callback may ask for the identity.
	if tried && cs.onReload != nil {
		cs.onReload(err)
	}
	return id
}

// reload loads the files that changed since they were last seen; tried
// says whether any had.
func (cs *certStore) reload() (id *tlsIdentity, tried bool, err error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	old := cs.cur.Load()
	certChanged := cs.certFile != "" && (changed(cs.certFile, cs.certSig) || changed(cs.keyFile, cs.keySig))
	caChanged := cs.caFile != "" && changed(cs.caFile, cs.caSig)
	if !certChanged && !caChanged {
		return old, false, nil
	}
	next := *old
	if certChanged {
		// Remember the files as seen even when they do not load: a pair
		// half written is tried again when the other half lands.
		cs.certSig, _ = access.StatFile(cs.certFile)
		cs.keySig, _ = access.StatFile(cs.keyFile)
		var c *tls.Certificate
		if c, err = LoadCertificate(cs.certFile, cs.keyFile); err == nil {
			next.cert, next.fp = c, Fingerprint(c.Certificate[0])
		}
	}
	if caChanged {
		cs.caSig, _ = access.StatFile(cs.caFile)
		pool, cerr := LoadClientCAs(cs.caFile)
		if cerr == nil {
			next.cas = pool
		}
		err = errors.Join(err, cerr)
	}
	if next.cert != old.cert || next.cas != old.cas {
		cs.cur.Store(&next)
	}
	return cs.cur.Load(), true, err
}

// changed compares path with what was seen last; a file that is missing
// now and was missing then has not changed (no reload, no log line, per
// handshake).
func changed(path string, was access.FileSig) bool {
	now, _ := access.StatFile(path)
	return now != was
}

// serverConfig is a TLS 1.3 server configuration for the given ALPNs that
// takes the identity in force at each handshake.
func (cs *certStore) serverConfig(alpns []string, clientAuth tls.ClientAuthType) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: alpns,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			id := cs.current()
			tc := &tls.Config{
				MinVersion:   tls.VersionTLS13,
				NextProtos:   alpns,
				Certificates: []tls.Certificate{*id.cert},
			}
			if id.cas != nil {
				tc.ClientCAs, tc.ClientAuth = id.cas, clientAuth
			}
			return tc, nil
		},
	}
}
