package policy

import (
	"strings"
	"testing"
)

// The library the tests load reports the version this build is tested with.
func TestRuntimeVersion(t *testing.T) {
	v, path, err := LoadRuntime("")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, ORTVersion) || path == "" || RuntimeVersion() != v {
		t.Fatalf("version %q from %q (RuntimeVersion %q), want %s", v, path, RuntimeVersion(), ORTVersion)
	}
}
