// Package testenv holds what tests need to know about the machine they run on.
package testenv

import (
	"os"
	"testing"
)

// Unavailable reports a peer tool (chromium, gcc, perf, bpftrace) that the
// test needs and cannot find. On a developer's machine that is a skip with
// the reason; under CI (CI set, as .ci/run runs) it is a failure, because
// `make test` installs every such tool first (scripts/install-build-deps.sh)
// and a missing one means the install step is broken, not that the machine
// cannot run the test.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set: make test installs it with scripts/install-build-deps.sh)", reason)
	}
	t.Skip(reason)
}

// RequireBPF skips where the machine truly cannot load the project's BPF
// programs: not root, or a kernel without BTF (the CO-RE programs need
// /sys/kernel/btf/vmlinux). rootReason says why root is needed, or what
// covers the unprivileged case. CI runs as root on a kernel with BTF, so
// there these tests always run.
func RequireBPF(t testing.TB, rootReason string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip(rootReason)
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		t.Skip("kernel has no BTF (/sys/kernel/btf/vmlinux): CO-RE programs cannot load")
	}
}
