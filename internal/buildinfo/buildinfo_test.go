package buildinfo

import (
	"runtime"
	"testing"
)

func TestRead(t *testing.T) {
	info := Read()
	if info.GoVersion != runtime.Version() {
		t.Errorf("Go version %q, want %q", info.GoVersion, runtime.Version())
	}
	// A test binary has no release version unless the linker set one.
	if info.Version != "devel" {
		t.Errorf("version %q, want devel in a test binary", info.Version)
	}
	version = "1.2.3"
	defer func() { version = "" }()
	if got := Read().Version; got != "1.2.3" {
		t.Errorf("the linker's version is not used: %q", got)
	}
}
