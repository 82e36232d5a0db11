package e2e

import "testing"

// The bench finds the agent's addresses in its "serving" line, with the TCP
// side on (the default) and off.
func TestServingLineParsesTheAddresses(t *testing.T) {
	fp := "5690f73c538142e2959b991e05c3f24b1f816958c4a9332647d78767c465b8a2"
	for _, line := range []string{
		`time=2026-12-03T06:44:59.900Z level=INFO msg="triage agent serving" quic=127.0.0.1:39217 tcp=127.0.0.1:37009 admin=127.0.0.1:19090 admin_tls=false model=interim fingerprint=` + fp + ` node=vm`,
		`time=2026-12-03T06:44:59.900Z level=INFO msg="triage agent serving" quic=127.0.0.1:39217 tcp=off admin=127.0.0.1:19090 admin_tls=false model=interim fingerprint=` + fp + ` node=vm`,
		`time=2026-12-03T06:44:59.900Z level=INFO msg="triage agent serving" quic=127.0.0.1:39217 admin=127.0.0.1:19090 model=interim fingerprint=` + fp,
	} {
		m := servingLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("no match: %s", line)
			continue
		}
		if m[1] != "127.0.0.1:39217" || m[2] != "127.0.0.1:19090" || m[3] != fp {
			t.Errorf("parsed quic=%s admin=%s fingerprint=%s from %s", m[1], m[2], m[3], line)
		}
	}
}
