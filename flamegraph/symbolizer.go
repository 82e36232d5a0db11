package flamegraph

import (
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
)

// SymbolizerConfig configures NewSymbolizer; the zero value means defaults.
type SymbolizerConfig struct {
	// MaxBinaries bounds the per-binary symbol cache (default 64); the least
	// recently used binary is dropped first.
	MaxBinaries int
	// MaxProcesses bounds the per-process mapping cache (default 4096).
	MaxProcesses int
	// ProcRoot is where /proc lives (default "/proc"); tests may point it
	// elsewhere.
	ProcRoot string
}

// Symbolizer names program counters. It keeps per-process mappings (keyed by
// pid and start time, so a reused pid is not mistaken for the old process)
// and per-binary symbol tables (keyed by build id, falling back to device and
// inode when a binary has none). Safe for concurrent use.
type Symbolizer struct {
	cfg    SymbolizerConfig
	mu     sync.Mutex
	kernel *KernelSymbols
	kerr   error
	procs  map[uint32]*ProcessInfo
	bins   map[string]*binEntry
	byFile map[fileKey]string // file identity -> cache key, to skip re-reading build ids
	tick   uint64
}

type binEntry struct {
	bin  *Binary
	used uint64
}

type fileKey struct{ dev, ino uint64 }

// NewSymbolizer loads the kernel symbols; when they are hidden the
// symboliser still works and kernel frames show as [kernel]+0x....
func NewSymbolizer(cfg SymbolizerConfig) *Symbolizer {
	if cfg.MaxBinaries <= 0 {
		cfg.MaxBinaries = 64
	}
	if cfg.MaxProcesses <= 0 {
		cfg.MaxProcesses = 4096
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	s := &Symbolizer{cfg: cfg, procs: map[uint32]*ProcessInfo{}, bins: map[string]*binEntry{}, byFile: map[fileKey]string{}}
	s.kernel, s.kerr = LoadKernelSymbols()
	return s
}

// KernelErr reports why kernel symbols are unavailable (nil when loaded).
func (s *Symbolizer) KernelErr() error { return s.kerr }

// Capture reads a process's mappings now, while it is alive; call it at
// drain time for every pid in the window. A process already captured with
// the same start time is kept (its mappings rarely change, and re-reading
// maps for every window would cost more than it gains); a new start time
// means a new process behind a reused pid.
func (s *Symbolizer) Capture(pid uint32) (*ProcessInfo, error) {
	pi, err := ReadProcess(pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.procs[pid]
	if err != nil {
		if old != nil {
			return old, nil // exited since: the cached copy is what we have
		}
		return nil, err
	}
	if old != nil && old.StartTime == pi.StartTime && len(old.Mappings) == len(pi.Mappings) {
		return old, nil
	}
	if len(s.procs) >= s.cfg.MaxProcesses {
		for k := range s.procs { // drop an arbitrary entry: bounded, not LRU
			delete(s.procs, k)
			break
		}
	}
	s.procs[pid] = pi
	return pi, nil
}

// Forget drops a process from the cache (e.g. once it has exited and its
// last window was written).
func (s *Symbolizer) Forget(pid uint32) {
	s.mu.Lock()
	delete(s.procs, pid)
	s.mu.Unlock()
}

// Process returns the cached info of pid, if captured.
func (s *Symbolizer) Process(pid uint32) *ProcessInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.procs[pid]
}

// Location is a symbolised program counter.
type Location struct {
	Address uint64
	Kernel  bool
	Mapping *Mapping // nil for kernel frames and unmapped addresses
	BuildID string
	Module  string // kernel module name, or mapped file path
	Frame   Frame  // Function empty when the frame could not be named
}

// Name is the frame's display name: the function, or module+0xoffset.
func (l Location) Name() string {
	if l.Frame.Function != "" {
		return l.Frame.Function
	}
	if l.Kernel {
		return fmt.Sprintf("[kernel]+0x%x", l.Address)
	}
	if l.Mapping != nil {
		mod := filepath.Base(l.Mapping.Path)
		if l.Mapping.Path == "" {
			mod = "[anon]"
		}
		return fmt.Sprintf("%s+0x%x", mod, l.Address-l.Mapping.Start+l.Mapping.Offset)
	}
	return fmt.Sprintf("[unknown]+0x%x", l.Address)
}

// KernelLocation names a kernel address.
func (s *Symbolizer) KernelLocation(addr uint64) Location {
	loc := Location{Address: addr, Kernel: true, Module: "[kernel.kallsyms]"}
	if name, mod, ok := s.kernel.Lookup(addr); ok {
		loc.Frame.Function = name
		if mod != "" {
			loc.Module = "[" + mod + "]"
		}
	}
	return loc
}

// UserLocation names a user address of pid. leaf is false for return
// addresses, which are looked up one byte earlier so a call at the very end
// of a function is not attributed to the next one.
func (s *Symbolizer) UserLocation(pid uint32, addr uint64, leaf bool) Location {
	loc := Location{Address: addr}
	pi := s.Process(pid)
	if pi == nil {
		return loc
	}
	m := pi.find(addr)
	if m == nil {
		return loc
	}
	loc.Mapping = m
	loc.Module = m.Path
	if m.Path == "" || m.Path[0] == '[' {
		return loc // [vdso], [anon]: nothing on disk to read
	}
	bin := s.mappingBinary(pi, m)
	if bin == nil {
		return loc
	}
	loc.BuildID = bin.BuildID
	lookup := addr
	if !leaf && lookup > 0 {
		lookup--
	}
	vaddr, ok := bin.VAddr(lookup - m.Start + m.Offset)
	if !ok {
		return loc
	}
	if fr, ok := bin.Lookup(vaddr); ok {
		loc.Frame = fr
	}
	return loc
}

// MappingOf returns the captured mapping holding addr in pid, if any.
func (s *Symbolizer) MappingOf(pid uint32, addr uint64) *Mapping {
	if pi := s.Process(pid); pi != nil {
		return pi.find(addr)
	}
	return nil
}

// mappingBinary returns the binary behind m, resolved once per process
// capture (a failure is remembered too).
func (s *Symbolizer) mappingBinary(pi *ProcessInfo, m *Mapping) *Binary {
	s.mu.Lock()
	if bin, ok := pi.bins[m.Start]; ok {
		s.mu.Unlock()
		return bin
	}
	s.mu.Unlock()
	bin := s.binary(pi.Pid, m)
	s.mu.Lock()
	if pi.bins == nil {
		pi.bins = map[uint64]*Binary{}
	}
	pi.bins[m.Start] = bin
	s.mu.Unlock()
	return bin
}

// binary opens (or finds cached) the file behind a mapping: through
// /proc/PID/map_files (needs CAP_SYS_ADMIN; the mapped inode itself), else
// through /proc/PID/root so binaries inside containers resolve.
func (s *Symbolizer) binary(pid uint32, m *Mapping) *Binary {
	paths := []string{
		// map_files is the very inode that is mapped, even if the path now
		// names a rebuilt binary (go test, deploys) or nothing at all.
		fmt.Sprintf("%s/%d/map_files/%x-%x", s.cfg.ProcRoot, pid, m.Start, m.Limit),
		fmt.Sprintf("%s/%d/root%s", s.cfg.ProcRoot, pid, m.Path),
	}
	for _, p := range paths {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			continue
		}
		fk := fileKey{uint64(st.Dev), st.Ino}
		s.mu.Lock()
		key, known := s.byFile[fk]
		if known {
			if e := s.bins[key]; e != nil {
				s.tick++
				e.used = s.tick
				s.mu.Unlock()
				return e.bin
			}
		}
		s.mu.Unlock()
		bin, err := OpenBinary(p)
		if err != nil {
			continue
		}
		key = bin.BuildID
		if key == "" {
			key = fmt.Sprintf("file:%d:%d", fk.dev, fk.ino)
		}
		s.mu.Lock()
		if e := s.bins[key]; e != nil { // same build id seen under another path
			bin = e.bin
		} else {
			s.evictLocked()
			s.bins[key] = &binEntry{bin: bin}
		}
		s.tick++
		s.bins[key].used = s.tick
		s.byFile[fk] = key
		s.mu.Unlock()
		return bin
	}
	return nil
}

func (s *Symbolizer) evictLocked() {
	for len(s.bins) >= s.cfg.MaxBinaries {
		var oldest string
		var t uint64 = ^uint64(0)
		for k, e := range s.bins {
			if e.used < t {
				oldest, t = k, e.used
			}
		}
		delete(s.bins, oldest)
		for fk, k := range s.byFile {
			if k == oldest {
				delete(s.byFile, fk)
			}
		}
	}
}
