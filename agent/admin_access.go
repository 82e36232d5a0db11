package agent

import (
	"net/http"

	"github.com/triage-agent/triage/agent/access"
)

// openAdminPaths answer without credentials unless Config.AdminAuthAll:
// Prometheus and the kubelet's probes call them, and they say nothing an
// operator would keep from the node's neighbours (no task, no stack, no
// way to change the agent).
var openAdminPaths = map[string]bool{"/metrics": true, "/healthz": true, "/readyz": true}

// adminAccess is the admin port's access rule, in front of every handler:
//
//   - the open paths answer everyone (unless AdminAuthAll);
//   - any other path needs a credential when one is configured: the bearer
//     token (--token, --token-file), or, on an admin port serving TLS with
//     --client-ca, a client certificate of that CA; without it, 401;
//   - with no credential configured, it answers loopback peers only (a
//     process on the node itself), 403 for any other peer.
//
// The rule is what stops a pod on the cluster network from promoting a
// model (POST /admin/promote), reading the flame graphs of every process
// on the node, or profiling the agent.
func (a *Agent) adminAccess(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if openAdminPaths[r.URL.Path] && !a.cfg.AdminAuthAll {
			next.ServeHTTP(w, r)
			return
		}
		switch {
		case r.TLS != nil && len(r.TLS.VerifiedChains) > 0:
			// A client certificate that the TLS layer verified against --client-ca.
		case a.auth.Configured() && a.auth.CheckHeader(r.Header.Get("Authorization")):
		case a.adminCredentialsConfigured():
			w.Header().Set("WWW-Authenticate", `Bearer realm="triage-admin"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "this admin endpoint needs Authorization: Bearer <token>" + a.adminCertHint()})
			return
		case !access.LoopbackPeer(r.RemoteAddr):
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "no --token or --token-file is configured, so this admin endpoint answers loopback peers only"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// adminCredentialsConfigured reports whether the admin port has a way to
// authenticate a caller (then loopback is no credential).
func (a *Agent) adminCredentialsConfigured() bool {
	return a.auth.Configured() || (a.cfg.AdminTLS && a.cfg.ClientCAFile != "")
}

func (a *Agent) adminCertHint() string {
	if a.cfg.AdminTLS && a.cfg.ClientCAFile != "" {
		return " or a client certificate of --client-ca"
	}
	return ""
}
