package flamegraph

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// PerfMap is a JIT's symbol file, /tmp/perf-PID.map: one "START SIZE name"
// line (hex, with or without 0x) per compiled function, as Node
// (--perf-basic-prof), the JVM's perf-map-agent, .NET, LuaJIT and others
// write it.
type PerfMap struct {
	entries []perfMapEntry // sorted by start; later lines win on overlap
	bytes   int
}

type perfMapEntry struct {
	start, end uint64
	name       string
}

// Bounds of ParsePerfMap: a JIT appends for as long as it runs, so the file
// is read up to a size and the names are capped. Variables so tests can
// lower them.
var (
	maxPerfMapBytes    int64 = 32 << 20
	maxPerfMapNameLen        = 512
	maxPerfMapLineSize       = 4096
)

// ErrPerfMapTooLarge means a perf map is larger than the reader accepts; the
// entries read up to the limit are kept.
var ErrPerfMapTooLarge = errors.New("perf map over the size limit")

// ParsePerfMap reads a perf map. Malformed lines are skipped (a JIT may be
// writing the last one as we read); a file over the size limit gives the
// entries of its first part and ErrPerfMapTooLarge. maxBytes (0: no cap)
// bounds the map's memory: past it the entries of the file's first lines
// are dropped, since a long-running JIT's recent code is what runs now.
func ParsePerfMap(r io.Reader, maxBytes int) (*PerfMap, error) {
	lr := &io.LimitedReader{R: r, N: maxPerfMapBytes + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 4096), maxPerfMapLineSize)
	pm := &PerfMap{}
	var err error
	for sc.Scan() {
		line := sc.Text()
		a, rest, ok1 := strings.Cut(strings.TrimSpace(line), " ")
		s, name, ok2 := strings.Cut(strings.TrimLeft(rest, " "), " ")
		if !ok1 || !ok2 {
			continue
		}
		start, e1 := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
		size, e2 := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
		name = strings.TrimSpace(name)
		if e1 != nil || e2 != nil || size == 0 || start+size < start || name == "" {
			continue
		}
		if len(name) > maxPerfMapNameLen {
			name = name[:maxPerfMapNameLen]
		}
		pm.entries = append(pm.entries, perfMapEntry{start, start + size, name})
		pm.bytes += entryBytes(name)
		if maxBytes > 0 && pm.bytes > maxBytes {
			pm.dropOldest(maxBytes * 3 / 4)
		}
	}
	if serr := sc.Err(); serr != nil && !errors.Is(serr, bufio.ErrTooLong) {
		err = fmt.Errorf("reading perf map: %w", serr)
	} else if errors.Is(serr, bufio.ErrTooLong) {
		err = fmt.Errorf("%w: a line over %d bytes", ErrPerfMapTooLarge, maxPerfMapLineSize)
	}
	if lr.N <= 0 {
		err = fmt.Errorf("%w (%d MiB)", ErrPerfMapTooLarge, maxPerfMapBytes>>20)
	}
	// Stable: of two entries at one start, the later line (a recompiled
	// function at a reused address) stays last and wins in Lookup.
	sort.SliceStable(pm.entries, func(i, j int) bool { return pm.entries[i].start < pm.entries[j].start })
	return pm, err
}

func entryBytes(name string) int { return len(name) + 40 }

// dropOldest removes entries from the front (the file's first lines) until
// the map takes at most target bytes.
func (pm *PerfMap) dropOldest(target int) {
	i := 0
	for ; i < len(pm.entries) && pm.bytes > target; i++ {
		pm.bytes -= entryBytes(pm.entries[i].name)
	}
	pm.entries = append(pm.entries[:0], pm.entries[i:]...)
}

// Lookup names the JIT function at addr.
func (pm *PerfMap) Lookup(addr uint64) (string, bool) {
	if pm == nil {
		return "", false
	}
	es := pm.entries
	i := sort.Search(len(es), func(i int) bool { return es[i].start > addr }) - 1
	// An earlier, longer entry may still cover addr when a later one that
	// starts closer ends before it; look back a few entries.
	for j := i; j >= 0 && j > i-8; j-- {
		if addr < es[j].end {
			return es[j].name, true
		}
	}
	return "", false
}

// Len is the number of entries.
func (pm *PerfMap) Len() int { return len(pm.entries) }

// Bytes estimates the map's memory.
func (pm *PerfMap) Bytes() int {
	if pm == nil {
		return 0
	}
	return pm.bytes
}
