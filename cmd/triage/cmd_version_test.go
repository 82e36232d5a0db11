package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/triage-agent/triage/internal/testenv"
	"github.com/triage-agent/triage/policy"
)

// The built binary reports the version the linker gave it, the Go version,
// the ONNX Runtime it loads and the schemas.
func TestVersionCommand(t *testing.T) {
	bin := testenv.BuildTriage(t, "-ldflags", "-X github.com/triage-agent/triage/internal/buildinfo.version=9.8.7-test")
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("triage version --json: %v", err)
	}
	var v versionInfo
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if v.Version != "9.8.7-test" || !strings.HasPrefix(v.GoVersion, "go1.") || v.StateSchema != policy.StateSchema || v.Protocol != "triage/1" {
		t.Errorf("version %+v", v)
	}
	if !strings.HasPrefix(v.ONNXRuntime, policy.ORTVersion) || v.ONNXRuntimePath == "" {
		t.Errorf("ONNX Runtime %q from %q (%s), want %s", v.ONNXRuntime, v.ONNXRuntimePath, v.ONNXRuntimeErr, policy.ORTVersion)
	}
	text, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.Contains(string(text), "triage 9.8.7-test\n") || !strings.Contains(string(text), "state schema "+policy.StateSchema) {
		t.Errorf("triage version: %v\n%s", err, text)
	}
	// Without a library it says why, and still prints the rest.
	cmd := exec.Command(bin, "version", "--onnxruntime-lib", "/nonexistent/libonnxruntime.so")
	cmd.Env = append(os.Environ(), "TRIAGE_ONNXRUNTIME_LIB=")
	text, err = cmd.Output()
	if err != nil || !strings.Contains(string(text), "onnxruntime  not loaded") || !strings.Contains(string(text), "triage 9.8.7-test") {
		t.Errorf("triage version without a library: %v\n%s", err, text)
	}
}
