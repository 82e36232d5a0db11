package flamegraph

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Mapping is one executable region of a process (a line of /proc/PID/maps).
type Mapping struct {
	Start, Limit, Offset uint64
	Path                 string // as in maps; "" for anonymous
	Inode                uint64
}

// ProcessInfo is what the symboliser captures about a process at drain time,
// so that frames can still be named after it exits.
type ProcessInfo struct {
	Pid       uint32
	StartTime uint64 // clock ticks since boot (field 22 of stat): pid reuse guard
	Comm      string
	Cgroup    string // the unified (v2) cgroup path, else the first one
	Container string // container id when the cgroup names one
	Mappings  []Mapping
	// NSPid is the process's id in its own (innermost) pid namespace: a
	// JIT inside a container names its perf map with it.
	NSPid uint32

	// binKeys caches the symboliser's cache key of the binary behind each
	// mapping (by mapping start; "" when it could not be read), so that a
	// stat per frame is not needed. Guarded by the Symbolizer's mutex.
	binKeys map[uint64]string
	// jit is the process's perf map, read when an address in anonymous
	// memory is named. Guarded by the Symbolizer's mutex.
	jit *jitState
}

// ReadProcess reads /proc/PID/{stat,comm,cgroup,maps}.
func ReadProcess(pid uint32) (*ProcessInfo, error) {
	dir := fmt.Sprintf("/proc/%d", pid)
	pi := &ProcessInfo{Pid: pid}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return nil, fmt.Errorf("reading process %d: %w", pid, err)
	}
	pi.StartTime = parseStartTime(string(stat))
	if b, err := os.ReadFile(dir + "/comm"); err == nil {
		pi.Comm = strings.TrimSpace(string(b))
	}
	pi.NSPid = pid
	if b, err := os.ReadFile(dir + "/status"); err == nil {
		if ns := parseNSPid(string(b)); ns != 0 {
			pi.NSPid = ns
		}
	}
	if b, err := os.ReadFile(dir + "/cgroup"); err == nil {
		pi.Cgroup, pi.Container = ParseCgroupFile(string(b))
	}
	f, err := os.Open(dir + "/maps")
	if err != nil {
		return nil, fmt.Errorf("reading maps of %d: %w", pid, err)
	}
	defer f.Close()
	if pi.Mappings, err = ParseMaps(f); err != nil {
		return nil, fmt.Errorf("parsing maps of %d: %w", pid, err)
	}
	return pi, nil
}

// parseStartTime returns field 22 of /proc/PID/stat; comm (field 2) may hold
// spaces and parentheses, so fields are counted after its last ')'.
func parseStartTime(stat string) uint64 {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// parseNSPid returns the last id of the NSpid line of /proc/PID/status
// (the innermost namespace's), 0 when absent (kernels before 4.1).
func parseNSPid(status string) uint32 {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			v, err := strconv.ParseUint(f[len(f)-1], 10, 32)
			if err != nil {
				return 0
			}
			return uint32(v)
		}
	}
	return 0
}

// ParseMaps parses /proc/PID/maps, keeping executable mappings only, sorted
// by start address.
func ParseMaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || len(f[1]) < 3 || f[1][2] != 'x' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		limit, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		ino, _ := strconv.ParseUint(f[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || limit <= start {
			continue
		}
		m := Mapping{Start: start, Limit: limit, Offset: off, Inode: ino}
		if len(f) >= 6 {
			m.Path = strings.Join(f[5:], " ")
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out, nil
}

// find returns the mapping holding addr.
func (p *ProcessInfo) find(addr uint64) *Mapping {
	ms := p.Mappings
	i := sort.Search(len(ms), func(i int) bool { return ms[i].Limit > addr })
	if i < len(ms) && ms[i].Start <= addr {
		return &ms[i]
	}
	return nil
}
