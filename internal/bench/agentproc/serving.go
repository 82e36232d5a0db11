package agentproc

import "regexp"

// servingLine is the agent's "serving" log line (agent.Run logs it once
// it listens): the TCP address, "off" when the TCP side is off and absent
// from older agents, sits between the QUIC and admin addresses.
var servingLine = regexp.MustCompile(`msg="triage agent serving" quic=(\S+) (?:tcp=\S+ )?admin=(\S+) .*fingerprint=([0-9a-f]{64})`)

type servingAddrs struct{ quic, admin, fingerprint string }

// parseServingLine reads the addresses and the certificate fingerprint
// from line, if it is the serving line.
func parseServingLine(line string) (servingAddrs, bool) {
	m := servingLine.FindStringSubmatch(line)
	if m == nil {
		return servingAddrs{}, false
	}
	return servingAddrs{quic: m[1], admin: m[2], fingerprint: m[3]}, true
}
