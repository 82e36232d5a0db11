package flamegraph

import (
	"fmt"
	"path/filepath"
	"runtime/metrics"
	"sync"
	"syscall"
	"time"
)

// SymbolizerConfig configures NewSymbolizer; the zero value means defaults.
type SymbolizerConfig struct {
	// MaxBinaries bounds the per-binary cache (default 64); the least
	// recently used binary is dropped first.
	MaxBinaries int
	// MaxCacheBytes bounds the memory of that cache (symbol tables, inline
	// indexes and unwind tables of the binaries) and of the processes' JIT
	// perf maps together (default 16 MiB). A table that alone would take
	// more than half of it is not built; its binary is walked by frame
	// pointer and named from its symbols.
	MaxCacheBytes int
	// MaxDWARFBytes caps the DWARF sections read to build one binary's
	// inline frames (default 64 MiB). The read is transient, but the heap
	// grows to hold it (a distribution's libc debug file is tens of MiB); a
	// binary whose DWARF is larger is named without inline frames.
	MaxDWARFBytes int
	// MaxProcesses bounds the per-process mapping cache (default 4096).
	MaxProcesses int
	// ProcRoot is where /proc lives (default "/proc"); tests may point it
	// elsewhere.
	ProcRoot string
	// AfterBuild, when set, is called after the symboliser read a binary
	// or built its unwind table, outside its lock, with the bytes the
	// process allocated on the heap meanwhile (mostly the build's: the
	// sections read whole, DWARF decompressed, rows before they are
	// packed). Most of that is garbage once the tables are built; the
	// agent hands a large build's back to the OS here rather than carry
	// it until its next flame-graph window.
	AfterBuild func(allocatedBytes uint64)
}

// DefaultMaxCacheBytes is the default of SymbolizerConfig.MaxCacheBytes.
const DefaultMaxCacheBytes = 16 << 20

// Symbolizer names program counters and walks copied user stacks. It keeps
// per-process mappings (keyed by pid and start time, so a reused pid is not
// mistaken for the old process) and per-binary tables (keyed by build id,
// falling back to device and inode when a binary has none). Safe for
// concurrent use.
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
	bin    *Binary
	used   uint64    // tick of the last use, for LRU order
	usedAt time.Time // time of the last use, for the eviction grace
}

// cacheGrace protects binaries used this recently from eviction: when the
// binaries one process maps need more than the cache cap (node's symbols
// and unwind table alone take ~12 MiB), evicting them would mean reading
// them again on every sample. The cache then goes over its cap, up to
// twice the cap, beyond which the grace no longer holds.
const cacheGrace = 10 * time.Second

type fileKey struct{ dev, ino uint64 }

// NewSymbolizer loads the kernel symbols; when they are hidden the
// symboliser still works and kernel frames show as [kernel]+0x....
func NewSymbolizer(cfg SymbolizerConfig) *Symbolizer {
	if cfg.MaxBinaries <= 0 {
		cfg.MaxBinaries = 64
	}
	if cfg.MaxCacheBytes <= 0 {
		cfg.MaxCacheBytes = DefaultMaxCacheBytes
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
	if old != nil && old.StartTime == pi.StartTime {
		pi.jit = old.jit // same process, new mappings: its JIT map stays valid
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
	// Frame is the function the address is in (the outermost one where
	// code was inlined); Function empty when it could not be named.
	Frame Frame
	// Frames are all functions at the address, innermost first (inlined
	// callees, then Frame); nil when only Frame is known.
	Frames []Frame
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

// ResolveKernel reads the names of the kernel symbols holding pcs that are
// not named yet, in one pass over /proc/kallsyms; KernelLocation then
// answers them without reading it. An error leaves those frames unnamed.
func (s *Symbolizer) ResolveKernel(pcs []uint64) error {
	return s.kernel.Resolve(pcs)
}

// KernelSymbolReads is how many times /proc/kallsyms was read (0 when the
// kernel's symbols are hidden).
func (s *Symbolizer) KernelSymbolReads() uint64 { return s.kernel.Reads() }

// KernelLocation names a kernel address (reading its name from
// /proc/kallsyms if ResolveKernel did not).
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
// of a function is not attributed to the next one. Code in anonymous
// memory is named from the process's JIT perf map, if it writes one.
func (s *Symbolizer) UserLocation(pid uint32, addr uint64, leaf bool) Location {
	loc := Location{Address: addr}
	pi := s.Process(pid)
	if pi == nil {
		return loc
	}
	lookup := addr
	if !leaf && lookup > 0 {
		lookup--
	}
	m := pi.find(addr)
	if m == nil || isAnonymous(m.Path) {
		if m != nil {
			loc.Mapping, loc.Module = m, m.Path
		}
		if name, ok := s.jitName(pi, lookup); ok {
			loc.Frame.Function, loc.Module = name, "[jit]"
		}
		return loc
	}
	loc.Mapping = m
	loc.Module = m.Path
	if m.Path[0] == '[' {
		return loc // [vdso], [vsyscall]: nothing on disk to read
	}
	bin := s.mappingBinary(pi, m)
	if bin == nil {
		return loc
	}
	loc.BuildID = bin.BuildID
	vaddr, ok := bin.VAddr(lookup - m.Start + m.Offset)
	if !ok {
		return loc
	}
	if fs := bin.Frames(vaddr); len(fs) > 0 {
		loc.Frame = fs[len(fs)-1]
		if len(fs) > 1 {
			loc.Frames = fs
		}
	}
	return loc
}

// isAnonymous reports whether a mapping's path names no file: anonymous
// memory (where JITs put code), memfd and the kernel's [anon:…] names.
func isAnonymous(path string) bool {
	return path == "" || path == "//anon" || len(path) > 6 && (path[:6] == "[anon:" || path[:6] == "/memfd")
}

// MappingOf returns the captured mapping holding addr in pid, if any.
func (s *Symbolizer) MappingOf(pid uint32, addr uint64) *Mapping {
	if pi := s.Process(pid); pi != nil {
		return pi.find(addr)
	}
	return nil
}

// mappingBinary returns the binary behind m, resolved once per process
// capture (a failure is remembered too). The process remembers the cache
// key, not the binary, so an evicted binary is freed and read again when
// needed rather than kept alive by every process that mapped it.
func (s *Symbolizer) mappingBinary(pi *ProcessInfo, m *Mapping) *Binary {
	s.mu.Lock()
	if key, ok := pi.binKeys[m.Start]; ok {
		if key == "" {
			s.mu.Unlock()
			return nil
		}
		if e := s.bins[key]; e != nil {
			s.touchLocked(e)
			s.mu.Unlock()
			return e.bin
		}
	}
	s.mu.Unlock()
	bin, key := s.binary(pi.Pid, m)
	s.mu.Lock()
	if pi.binKeys == nil {
		pi.binKeys = map[uint64]string{}
	}
	pi.binKeys[m.Start] = key
	s.mu.Unlock()
	return bin
}

// mappingPaths are the ways to open the file behind a mapping: through
// /proc/PID/map_files (needs CAP_SYS_ADMIN; the very inode that is mapped,
// even if the path now names a rebuilt binary or nothing at all), else
// through /proc/PID/root so binaries inside containers resolve.
func (s *Symbolizer) mappingPaths(pid uint32, m *Mapping) []string {
	return []string{
		fmt.Sprintf("%s/%d/map_files/%x-%x", s.cfg.ProcRoot, pid, m.Start, m.Limit),
		fmt.Sprintf("%s/%d/root%s", s.cfg.ProcRoot, pid, m.Path),
	}
}

// debugDirs are where a process's debug files are looked for: inside its
// own root first (a container's image), then the host's.
func (s *Symbolizer) debugDirs(pid uint32) []string {
	return []string{fmt.Sprintf("%s/%d/root/usr/lib/debug", s.cfg.ProcRoot, pid), "/usr/lib/debug"}
}

// binaryOptions are the bounds of reading one of pid's binaries.
func (s *Symbolizer) binaryOptions(pid uint32) binaryOptions {
	return binaryOptions{debugDirs: s.debugDirs(pid), maxIndex: s.cfg.MaxCacheBytes / 2, maxDWARF: uint64(s.cfg.MaxDWARFBytes)}
}

// binary opens (or finds cached) the file behind a mapping; it returns the
// binary and its cache key ("" when it could not be read).
func (s *Symbolizer) binary(pid uint32, m *Mapping) (*Binary, string) {
	for _, p := range s.mappingPaths(pid, m) {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			continue
		}
		fk := fileKey{uint64(st.Dev), st.Ino}
		s.mu.Lock()
		if key, known := s.byFile[fk]; known {
			if e := s.bins[key]; e != nil {
				s.touchLocked(e)
				s.mu.Unlock()
				return e.bin, key
			}
		}
		s.mu.Unlock()
		before := heapAllocated()
		bin, err := openBinary(p, s.binaryOptions(pid))
		s.afterBuild(before)
		if err != nil {
			continue
		}
		key := bin.BuildID
		if key == "" {
			key = fmt.Sprintf("file:%d:%d", fk.dev, fk.ino)
		}
		s.mu.Lock()
		if e := s.bins[key]; e != nil { // same build id seen under another path
			bin = e.bin
		} else {
			s.bins[key] = &binEntry{bin: bin}
		}
		s.touchLocked(s.bins[key])
		s.byFile[fk] = key
		s.evictLocked(key)
		s.mu.Unlock()
		return bin, key
	}
	return nil, ""
}

// afterBuild tells AfterBuild what a build allocated since before.
func (s *Symbolizer) afterBuild(before uint64) {
	if s.cfg.AfterBuild != nil {
		s.cfg.AfterBuild(heapAllocated() - before)
	}
}

// heapAllocated is the bytes the process has allocated on the heap since
// it started.
func heapAllocated() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

func (s *Symbolizer) touchLocked(e *binEntry) {
	s.tick++
	e.used = s.tick
	e.usedAt = time.Now()
}

// evictLocked drops least recently used binaries until both the count and
// the byte caps hold; keep (the binary just used) stays, and so do binaries
// used within cacheGrace while the cache is under twice its byte cap.
func (s *Symbolizer) evictLocked(keep string) {
	now := time.Now()
	for {
		total := s.jitBytesLocked()
		for _, e := range s.bins {
			total += e.bin.Bytes()
		}
		overCount := len(s.bins) > s.cfg.MaxBinaries
		if !overCount && total <= s.cfg.MaxCacheBytes {
			return
		}
		hard := overCount || total > 2*s.cfg.MaxCacheBytes
		var oldest string
		var t uint64 = ^uint64(0)
		for k, e := range s.bins {
			if k != keep && e.used < t && (hard || now.Sub(e.usedAt) >= cacheGrace) {
				oldest, t = k, e.used
			}
		}
		if oldest == "" {
			return
		}
		delete(s.bins, oldest)
		for fk, k := range s.byFile {
			if k == oldest {
				delete(s.byFile, fk)
			}
		}
	}
}

// CacheBytes is the memory the binary cache and the JIT maps hold now.
func (s *Symbolizer) CacheBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := s.jitBytesLocked()
	for _, e := range s.bins {
		total += e.bin.Bytes()
	}
	return total
}
