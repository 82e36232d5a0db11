package policy

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The ONNX Runtime environment is per process and the other tests load it,
// so the missing-library cases run in a child process (this test binary
// re-executed) that has not loaded anything yet.
const childEnv = "TRIAGE_POLICY_RUNTIME_CHILD"

func TestRuntimeLibraryErrors(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		runtimeChild(t)
		return
	}
	good := os.Getenv("TRIAGE_ONNXRUNTIME_LIB")
	if good == "" {
		good = CachedLibraryPath()
	}
	if _, err := os.Stat(good); err != nil {
		t.Fatalf("no ONNX Runtime library at %q: run `make ort` (scripts/fetch-onnxruntime.sh) and set TRIAGE_ONNXRUNTIME_LIB", good)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRuntimeLibraryErrors$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1", "TRIAGE_POLICY_GOOD_LIB="+good)
	out, err := cmd.CombinedOutput()
	t.Logf("child output:\n%s", out)
	if err != nil {
		t.Fatalf("child process failed: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestRuntimeLibraryErrors") {
		t.Fatal("child process did not run the test")
	}
}

func runtimeChild(t *testing.T) {
	model := mustMarshal(t, BootstrapMLP(), BootstrapMetadata())
	missing := filepath.Join(t.TempDir(), "no-such-libonnxruntime.so.1")
	notALib := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(notALib, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{missing, notALib} {
		_, err := LoadBytes(model, Config{Device: DeviceCPU, LibraryPath: bad})
		if !errors.Is(err, ErrRuntimeUnavailable) {
			t.Fatalf("library %s: error %v, want ErrRuntimeUnavailable", bad, err)
		}
		for _, want := range []string{bad, "make ort", "scripts/fetch-onnxruntime.sh", "--onnxruntime-lib"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q: %v", want, err)
			}
		}
		if RuntimeLibrary() != "" {
			t.Fatalf("a failed load left RuntimeLibrary() = %q", RuntimeLibrary())
		}
		t.Logf("library %s: %v", bad, err)
	}
	// A failed load is retryable with another path.
	good := os.Getenv("TRIAGE_POLICY_GOOD_LIB")
	s, err := LoadBytes(model, Config{Device: DeviceCPU, LibraryPath: good})
	if err != nil {
		t.Fatalf("retry with %s: %v", good, err)
	}
	defer s.Close()
	if RuntimeLibrary() != good {
		t.Errorf("RuntimeLibrary() = %q, want %q", RuntimeLibrary(), good)
	}
	checkAgainstForward(t, s, BootstrapMLP())
}
