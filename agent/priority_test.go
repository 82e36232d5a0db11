package agent

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// Every thread takes the slice, keeps its niceness, and threads the Go
// runtime starts afterwards inherit it; 0 gives the kernel's slice back.
// No privilege is needed, so the test runs as any user.
func TestApplySchedSliceSetsEveryThreadAndNewOnes(t *testing.T) {
	const slice = 300 * time.Microsecond
	before := threadNices(t)
	if err := applySchedSlice(slice); errors.Is(err, ErrNoSchedSlice) {
		t.Skipf("kernel without custom slices: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := applySchedSlice(0); err != nil {
			t.Errorf("giving the kernel's slice back: %v", err)
		}
		for tid, s := range threadSlices(t) {
			if s == uint64(slice) {
				t.Errorf("thread %d kept the slice after it was given back", tid)
			}
		}
	}()
	// Goroutines that each hold a thread, more than there are, make the
	// runtime start new ones.
	held := len(before) + 2
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(held)
	for range held {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			started.Done()
			<-release
		}()
	}
	started.Wait()
	defer close(release)
	slices := threadSlices(t)
	if len(slices) <= len(before) {
		t.Fatalf("%d threads after %d were held, %d before: the test started none", len(slices), held, len(before))
	}
	for tid, s := range slices {
		if s != uint64(slice) {
			t.Errorf("thread %d has a slice of %d ns, want %d", tid, s, slice.Nanoseconds())
		}
	}
	for tid, nice := range threadNices(t) {
		if was, ok := before[tid]; ok && nice != was {
			t.Errorf("thread %d at niceness %d after the slice was set, %d before", tid, nice, was)
		}
	}
}

// threadSlices reads the slice every thread of this process asked for
// (sched_attr.sched_runtime; the kernel's own slice where none was).
func threadSlices(t *testing.T) map[int]uint64 {
	t.Helper()
	out := map[int]uint64{}
	err := eachThread(func(tid int) error {
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			return err
		}
		out[tid] = attr.Runtime
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
