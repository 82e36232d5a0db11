package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestUnavailableFailsUnderCI runs Unavailable in a child test process with
// and without CI set and checks that it fails in one and skips in the other.
func TestUnavailableFailsUnderCI(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		Unavailable(t, "frobnicator not installed")
		t.Fatal("Unavailable returned")
	}
	run := func(ci string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUnavailableFailsUnderCI$", "-test.v")
		env := []string{"TESTENV_CHILD=1"}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "CI=") {
				env = append(env, kv)
			}
		}
		if ci != "" {
			env = append(env, "CI="+ci)
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err != nil || !strings.Contains(out, "--- SKIP") || !strings.Contains(out, "frobnicator not installed") {
		t.Errorf("without CI: want a skip with the reason, got err %v:\n%s", err, out)
	}
	out, err = run("true")
	if err == nil || !strings.Contains(out, "--- FAIL") || !strings.Contains(out, "install-build-deps.sh") {
		t.Errorf("with CI: want a failure naming the install script, got err %v:\n%s", err, out)
	}
}
