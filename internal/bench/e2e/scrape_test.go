package e2e

import (
	"math"
	"testing"
)

func TestHistQuantile(t *testing.T) {
	bs := []bucket{{0.001, 50}, {0.002, 90}, {0.004, 100}, {math.Inf(1), 100}}
	if got := histQuantile(bs, 0.5); got != 0.001 {
		t.Fatalf("p50 = %v", got)
	}
	if got := histQuantile(bs, 0.7); math.Abs(got-0.0015) > 1e-12 {
		t.Fatalf("p70 = %v", got)
	}
	if got := histQuantile(bs, 0.99); math.Abs(got-0.0038) > 1e-12 {
		t.Fatalf("p99 = %v", got)
	}
	if histQuantile(nil, 0.5) != 0 {
		t.Fatal("empty")
	}
}

// The bench finds the agent's addresses in its serving line, with or
// without the TCP transport's address.
func TestServingLine(t *testing.T) {
	fp := "bfa5971c124739794406d914b02e76c8f4f053db073c1f1fc409833af7f894aa"
	for _, line := range []string{
		`time=x level=INFO msg="triage agent serving" quic=127.0.0.1:60743 tcp=127.0.0.1:43091 admin=127.0.0.1:33395 admin_tls=false model=m fingerprint=` + fp + ` node=vm`,
		`time=x level=INFO msg="triage agent serving" quic=127.0.0.1:60743 admin=127.0.0.1:33395 model=m fingerprint=` + fp,
	} {
		m := servingLine.FindStringSubmatch(line)
		if m == nil || m[1] != "127.0.0.1:60743" || m[2] != "127.0.0.1:33395" || m[3] != fp {
			t.Fatalf("%q: %q", line, m)
		}
	}
}
