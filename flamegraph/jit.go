package flamegraph

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// jitState is a process's perf map and when it was last looked at.
type jitState struct {
	pm      *PerfMap
	size    int64
	mtime   time.Time
	checked time.Time
	err     error
}

// jitRecheck is how often a process's perf map is stat'ed again: a JIT
// appends as it compiles, and a frame named a second late is fine.
const jitRecheck = time.Second

// perfMapPath is where pid's JIT writes its map, seen from this process:
// /tmp/perf-NSPID.map inside the target's root (its mount namespace), with
// the pid as the target knows itself.
func (s *Symbolizer) perfMapPath(pi *ProcessInfo) string {
	return fmt.Sprintf("%s/%d/root/tmp/perf-%d.map", s.cfg.ProcRoot, pi.Pid, pi.NSPid)
}

// jitName names addr from pi's perf map, reading (or re-reading, when it
// grew) the map first.
func (s *Symbolizer) jitName(pi *ProcessInfo, addr uint64) (string, bool) {
	s.mu.Lock()
	st := pi.jit
	stale := st == nil || time.Since(st.checked) >= jitRecheck
	s.mu.Unlock()
	if stale {
		s.refreshPerfMap(pi)
		s.mu.Lock()
		st = pi.jit
		s.mu.Unlock()
	}
	if st == nil {
		return "", false
	}
	return st.pm.Lookup(addr)
}

// refreshPerfMap re-reads pi's perf map if its size or time changed. A map
// is refused when the maps already held take half of the cache budget, and
// one map is capped at a quarter of it.
func (s *Symbolizer) refreshPerfMap(pi *ProcessInfo) {
	path := s.perfMapPath(pi)
	now := time.Now()
	fi, err := os.Stat(path)
	s.mu.Lock()
	old := pi.jit
	if err != nil || !fi.Mode().IsRegular() {
		if old != nil {
			old.checked = now // keep what was read: the process may have exited
		} else if errors.Is(err, os.ErrNotExist) || err == nil {
			pi.jit = &jitState{checked: now, err: err}
		}
		s.mu.Unlock()
		return
	}
	if old != nil && old.size == fi.Size() && old.mtime.Equal(fi.ModTime()) {
		old.checked = now
		s.mu.Unlock()
		return
	}
	room := s.cfg.MaxCacheBytes/2 - s.jitBytesLocked() + old.bytes()
	s.mu.Unlock()
	st := &jitState{size: fi.Size(), mtime: fi.ModTime(), checked: now}
	if room <= 0 {
		st.err = fmt.Errorf("%w: JIT perf maps take half of the cache budget", ErrPerfMapTooLarge)
	} else {
		st.pm, st.err = readPerfMap(path, min(room, s.cfg.MaxCacheBytes/4))
	}
	s.mu.Lock()
	pi.jit = st
	s.mu.Unlock()
}

func (j *jitState) bytes() int {
	if j == nil {
		return 0
	}
	return j.pm.Bytes()
}

func readPerfMap(path string, maxBytes int) (*PerfMap, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParsePerfMap(f, maxBytes)
}

// jitBytesLocked sums the perf maps held by all processes.
func (s *Symbolizer) jitBytesLocked() int {
	n := 0
	for _, pi := range s.procs {
		n += pi.jit.bytes()
	}
	return n
}

// RefreshJIT re-reads pid's perf map if it changed (at most once a second),
// so that JIT frames are named even if the process exits before its window
// is symbolised.
func (s *Symbolizer) RefreshJIT(pid uint32) {
	pi := s.Process(pid)
	if pi == nil {
		return
	}
	s.mu.Lock()
	stale := pi.jit == nil || time.Since(pi.jit.checked) >= jitRecheck
	s.mu.Unlock()
	if stale {
		s.refreshPerfMap(pi)
	}
}
