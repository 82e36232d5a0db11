package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// threadNices reads the niceness of every thread of this process
// (/proc/self/task/TID/stat, field 19).
func threadNices(t *testing.T) map[int]int {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil || len(stats) == 0 {
		t.Fatalf("listing threads: %v", err)
	}
	out := map[int]int{}
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended
		}
		// The command name (field 2) may hold spaces: fields count from
		// the closing parenthesis, which is field 2's end.
		rest := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		nice, err := strconv.Atoi(rest[16]) // field 19 is the 17th after field 2
		if err != nil {
			t.Fatalf("%s: niceness %q: %v", p, rest[16], err)
		}
		tid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		out[tid] = nice
	}
	return out
}

// Every thread the process has takes the niceness, not only the caller's:
// Linux keeps one per thread.
func TestApplyNiceSetsEveryThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the test raises the niceness and could not lower it back")
	}
	defer func() {
		if err := applyNice(0); err != nil {
			t.Errorf("restoring niceness 0: %v", err)
		}
	}()
	if err := applyNice(7); err != nil {
		t.Fatal(err)
	}
	for tid, nice := range threadNices(t) {
		if nice != 7 {
			t.Errorf("thread %d at niceness %d, want 7", tid, nice)
		}
	}
}
