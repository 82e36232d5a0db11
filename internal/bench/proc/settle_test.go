package proc

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseDirtySumsDirtyAndWriteback(t *testing.T) {
	got, err := parseDirty([]byte("MemTotal:  100 kB\nDirty:   12 kB\nWriteback:    3 kB\nWritebackTmp: 9 kB\n"))
	if err != nil || got != 15<<10 {
		t.Fatalf("parseDirty: %d, %v; want %d", got, err, 15<<10)
	}
	for _, bad := range []string{"Dirty: 12 kB\n", "Dirty: x kB\nWriteback: 1 kB\n", "Dirty: -4 kB\nWriteback: 1 kB\n", ""} {
		if _, err := parseDirty([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Dirty pages written just before are flushed: 32 MiB left dirty, the wait
// ends with at most 4 MiB dirty or in writeback (sync flushes the whole
// machine's), which it could not without flushing them.
func TestSettleDiskFlushesWhatWasJustWritten(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "dirty"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 32<<20)); err != nil {
		t.Fatal(err)
	}
	const quiet = 4 << 20
	waited, pending, err := SettleDisk(quiet, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if pending > quiet {
		t.Fatalf("after %v, %d bytes dirty or in writeback, want at most %d", waited, pending, quiet)
	}
}
