package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// What a settled disk is for the benches (bench e2e before each run,
// calibrate.MeasureDisk before its levels): at most SettleQuietBytes dirty
// or in writeback, waited for up to SettleTimeout.
const (
	SettleQuietBytes = 1 << 20
	SettleTimeout    = 15 * time.Second
)

// SettleDisk flushes every dirty page (sync) and waits, up to timeout,
// until the kernel holds at most quietBytes of dirty or in-writeback pages,
// so that a run that writes to disk does not start while the writeback of
// the run before it (its files, its deletions, the journal) still holds the
// disk. It returns how long it waited and the dirty and writeback bytes at
// the end; a timeout is not an error (the caller runs on a busier disk and
// can say so), a missing /proc/meminfo is.
func SettleDisk(quietBytes int64, timeout time.Duration) (waited time.Duration, pending int64, err error) {
	start := time.Now()
	for {
		unix.Sync()
		if pending, err = dirtyBytes(); err != nil {
			return time.Since(start), 0, err
		}
		if pending <= quietBytes || time.Since(start) >= timeout {
			return time.Since(start), pending, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dirtyBytes is Dirty + Writeback of /proc/meminfo, in bytes.
func dirtyBytes() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("reading dirty pages: %w", err)
	}
	return parseDirty(b)
}

// parseDirty sums the "Dirty:" and "Writeback:" lines (kB) of a meminfo
// text; both must be there.
func parseDirty(meminfo []byte) (int64, error) {
	var sum int64
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 || (string(f[0]) != "Dirty:" && string(f[0]) != "Writeback:") {
			continue
		}
		kb, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("meminfo %s %q: not a count of kB", f[0], f[1])
		}
		sum += kb << 10
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("meminfo: no Dirty and Writeback lines")
	}
	return sum, nil
}
