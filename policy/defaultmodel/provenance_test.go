package defaultmodel

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// readProvenance parses provenance.txt: "key value" lines, # comments.
func readProvenance(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("provenance.txt")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("provenance.txt: line %q is not \"key value\"", line)
		}
		fields[k] = strings.TrimSpace(v)
	}
	return fields
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestProvenanceRecordsTheEmbeddedModel: `make model` rebuilds model.onnx
// from the commit provenance.txt names and accepts only the sha256 it
// records, so the record must be the embedded model's: its bytes, its
// version, and the file that commit holds.
func TestProvenanceRecordsTheEmbeddedModel(t *testing.T) {
	p := readProvenance(t)
	if got, want := sha256Hex(model), p["sha256"]; got != want {
		t.Errorf("model.onnx sha256 %s, provenance.txt records %s: update the record with the model", got, want)
	}
	meta, err := policy.ReadMetadata(Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if meta.Version != p["version"] {
		t.Errorf("model.onnx is version %q, provenance.txt records %q", meta.Version, p["version"])
	}
	commit := p["commit"]
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(commit) {
		t.Fatalf("provenance.txt commit %q is not a full commit hash", commit)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git: the recorded commit's own model.onnx is not checked")
	}
	if err := exec.Command("git", "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		t.Skipf("commit %s is not in this checkout (an export or a shallow clone): its model.onnx is not checked", commit)
	}
	old, err := exec.Command("git", "show", commit+":policy/defaultmodel/model.onnx").Output()
	if err != nil {
		t.Fatalf("git show %s:policy/defaultmodel/model.onnx: %v", commit, err)
	}
	if got := sha256Hex(old); got != p["sha256"] {
		t.Errorf("commit %s holds a model.onnx of sha256 %s, not the recorded %s: that commit did not build this model", commit, got, p["sha256"])
	}
}
