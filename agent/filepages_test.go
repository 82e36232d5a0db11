package agent

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"testing"
)

// rssFileKiB is this process's resident file-backed memory.
func rssFileKiB(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "RssFile:") {
			return smapsKiB(sc.Bytes())
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// Releasing the file pages of this very process drops resident memory,
// and the code it runs afterwards comes back from the page cache.
func TestReleaseFilePages(t *testing.T) {
	before := rssFileKiB(t)
	released, err := releaseFilePages()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKiB(t)
	if released <= 0 || after >= before {
		t.Fatalf("released %d bytes; RssFile %d KiB before, %d KiB after", released, before, after)
	}
	t.Logf("released %d KiB; RssFile %d KiB before, %d KiB after", released>>10, before, after)
	// Everything still runs (the test framework, the parser, the runtime).
	if _, err := releaseFilePages(); err != nil {
		t.Fatal(err)
	}
}

// Only read-only mappings of regular files qualify.
func TestParseMappingHeader(t *testing.T) {
	for _, c := range []struct {
		line     string
		ok, elig bool
	}{
		{"00400000-00de7000 r-xp 00000000 fe:00 1234 /usr/bin/triage", true, true},
		{"7f00-7f10 r--p 00000000 fe:00 1234 /usr/lib/libc.so.6", true, true},
		{"7f00-7f10 rw-p 00000000 fe:00 1234 /usr/lib/libc.so.6", true, false},
		{"7f00-7f10 rw-p 00000000 00:00 0", true, false},
		{"7f00-7f10 r--s 00000000 00:0e 55 anon_inode:bpf-map", true, false},
		{"7f00-7f10 r--s 00000000 00:06 9 /dev/nvidia0", true, false},
		{"7f00-7f10 ---p 00000000 fe:00 1234 /usr/lib/libc.so.6", true, false},
		{"Rss:                 124 kB", false, false},
		{"7f10-7f00 r--p 00000000 fe:00 1234 /x", false, false},
	} {
		_, _, elig, ok := parseMappingHeader([]byte(c.line))
		if ok != c.ok || elig != c.elig {
			t.Errorf("%q: ok %v eligible %v, want %v %v", c.line, ok, elig, c.ok, c.elig)
		}
	}
}

var windowBurst [][]byte // keeps the burst from being optimised away

// After a flame-graph window the agent hands back both what the window's
// burst of allocation left free on the heap and the file pages it walked.
func TestReturnFreeMemoryHandsBackHeapAndFilePages(t *testing.T) {
	if _, err := releaseFilePages(); err != nil {
		t.Fatal(err)
	}
	// 64 MiB, four times what a symbolised window allocates: the runtime's
	// background scavenger returns some of a burst on its own between the
	// collection and the reading (7.6 of 16 MiB once, under a loaded test
	// run), and what is asked here is that returnFreeMemory takes back
	// the rest at once.
	windowBurst = make([][]byte, 256)
	for i := range windowBurst {
		windowBurst[i] = make([]byte, 256<<10)
		windowBurst[i][0] = 1
	}
	windowBurst = nil
	runtime.GC() // collected, not yet returned
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	keptBefore := ms.HeapIdle - ms.HeapReleased
	released, err := returnFreeMemory()
	runtime.ReadMemStats(&ms)
	if err != nil {
		t.Fatalf("returning the free memory: %v", err)
	}
	keptAfter := ms.HeapIdle - ms.HeapReleased
	// Allocations after the collection (the smaps read) may hold a little
	// back; the burst must be gone.
	if keptBefore < 16<<20 || keptAfter > keptBefore/4 {
		t.Errorf("free heap kept from the OS: %d KiB before, %d KiB after, want at least a quarter of the burst's 64 MiB kept before and a quarter of that at most after", keptBefore>>10, keptAfter>>10)
	}
	// The code that ran since the last release (the burst, the collection)
	// is resident again, so a release always finds some.
	if released <= 0 {
		t.Errorf("released %d bytes of file pages, want the pages the burst walked", released)
	}
	t.Logf("free heap kept %d → %d KiB; %d KiB of file pages released", keptBefore>>10, keptAfter>>10, released>>10)
}
