package main

import (
	"os"
	"path/filepath"
	"testing"
)

// writeScenario writes a scenario file (JSON src) into dir and returns its
// path.
func writeScenario(t *testing.T, dir, src string) string {
	t.Helper()
	path := filepath.Join(dir, "s.json")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
