// Package faulttest is what the fault tests share: the real faults they
// inject (a small tmpfs that fills up, cgroups made on the real
// hierarchy) and what they measure in a process (open descriptors,
// goroutines). Only tests import it.
//
// Each fault test runs in `make test` (as root under CI) and is skipped by
// `go test -short`, with the reason, because it takes tens of seconds.
package faulttest

import (
	"os"
	"testing"
)

// Long skips t under -short: a fault test runs for tens of seconds (kills,
// a minute of flapping), which a quick edit-test loop should not pay.
// `make test` does not pass -short, so CI runs it.
func Long(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s takes tens of seconds (make test runs it)", what)
	}
}

// RequireRoot skips t where the process is not root; why says what needs
// it. CI runs as root, so there the test always runs.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("not root: %s needs root (CI runs as root)", why)
	}
}
