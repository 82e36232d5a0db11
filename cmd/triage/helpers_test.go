package main

import (
	"fmt"
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

// writeOneClassScenario writes a v1 scenario of one 30 ms class (3 ms
// exponential costs) at 50 tasks/s on 2 workers, an easy load, and returns
// its path.
func writeOneClassScenario(t *testing.T, dir, name string, durationS int) string {
	t.Helper()
	return writeScenario(t, dir, fmt.Sprintf(`{"name":%q,"seed":3,"duration_s":%d,"workers":2,
	 "arrival":{"process":"poisson","rate_per_s":50},
	 "classes":[{"name":"a","share":1,"sla_ms":30,"cost_ms":{"dist":"exponential","mean":3}}]}`, name, durationS))
}
