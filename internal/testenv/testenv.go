// Package testenv holds what tests need to know about the machine they run
// on, and the few chores many packages' tests share (building the binary,
// replacing a watched file).
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
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

// BuildTriage builds the triage binary (cmd/triage) into a temporary
// directory of t, with extra `go build` flags (-ldflags ...), for tests
// that run it as a child process; it returns the binary's path.
func BuildTriage(t testing.TB, buildFlags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "triage")
	args := append(append([]string{"build"}, buildFlags...), "-o", bin, "github.com/triage-agent/triage/cmd/triage")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("building triage: %v\n%s", err, out)
	}
	return bin
}

// ReplaceFile replaces the file at path with b the way a deploy (or a
// trainer, or cert-manager) should: written to a temporary name beside it,
// then renamed into place, so a watcher never reads a half-written file.
func ReplaceFile(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
