package agentproc

import "testing"

// The addresses and fingerprint come out of the serving line with the TCP
// side on (the default), off, and absent (an older agent); other lines
// are not taken for it.
func TestParseServingLine(t *testing.T) {
	fp := "5690f73c538142e2959b991e05c3f24b1f816958c4a9332647d78767c465b8a2"
	for _, line := range []string{
		`time=2026-12-03T06:44:59.900Z level=INFO msg="triage agent serving" quic=127.0.0.1:39217 tcp=127.0.0.1:37009 admin=127.0.0.1:19090 admin_tls=false model=interim device=cpu guard=true fingerprint=` + fp + ` experience=/tmp/e node=vm`,
		`time=2026-12-03T06:44:59.900Z level=INFO msg="triage agent serving" quic=127.0.0.1:39217 tcp=off admin=127.0.0.1:19090 admin_tls=false model=interim fingerprint=` + fp + ` node=vm`,
		`time=2026-12-03T06:44:59.900Z level=INFO msg="triage agent serving" quic=127.0.0.1:39217 admin=127.0.0.1:19090 model=interim fingerprint=` + fp,
	} {
		a, ok := parseServingLine(line)
		if !ok {
			t.Errorf("no match: %s", line)
			continue
		}
		if a.quic != "127.0.0.1:39217" || a.admin != "127.0.0.1:19090" || a.fingerprint != fp {
			t.Errorf("parsed %+v from %s", a, line)
		}
	}
	for _, line := range []string{
		`time=x level=INFO msg="model loaded" version=interim`,
		`time=x level=INFO msg="triage agent serving" quic=127.0.0.1:39217 admin=127.0.0.1:19090 fingerprint=short`,
		`{"time":"x","level":"INFO","msg":"triage agent serving","quic":"127.0.0.1:39217"}`,
	} {
		if a, ok := parseServingLine(line); ok {
			t.Errorf("%s taken for the serving line: %+v", line, a)
		}
	}
}
