package flamegraph

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// ErrKallsymsRestricted means /proc/kallsyms shows only zero addresses
// (kptr_restrict, or not root): kernel frames then show as [kernel]+0x...
var ErrKallsymsRestricted = errors.New("kernel symbol addresses are hidden (kptr_restrict or no CAP_SYSLOG)")

// KernelSymbols names kernel addresses. It keeps the text symbols'
// addresses only (8 bytes a symbol, ~1 MiB for a distribution kernel's
// 120k), not their names: names are read from the source again, in one
// pass, for the symbols a flame graph needs (Resolve), and those are kept.
// Holding every name took 4 to 5 MiB of the agent's live heap, doubled by
// the collector's headroom, for the few thousand symbols a node's stacks
// ever touch; the pass costs about what reading the file costs (~40 ms
// here), at most twice per window and only when a window holds a kernel
// address not named before.
type KernelSymbols struct {
	open func() (io.ReadCloser, error)

	reads atomic.Uint64 // passes over the source, the first one included

	mu    sync.Mutex
	addrs []uint64              // ascending; one entry per distinct address
	names map[uint64]kernelName // by symbol address, for symbols resolved so far
}

type kernelName struct{ name, module string }

// maxKernelNames bounds the names kept; past it the cache starts again
// (a node's stacks touch a few thousand kernel functions).
const maxKernelNames = 1 << 15

// LoadKernelSymbols reads /proc/kallsyms.
func LoadKernelSymbols() (*KernelSymbols, error) {
	return NewKernelSymbols(func() (io.ReadCloser, error) {
		f, err := os.Open("/proc/kallsyms")
		if err != nil {
			return nil, fmt.Errorf("opening kallsyms: %w", err)
		}
		return f, nil
	})
}

// NewKernelSymbols reads the addresses of the text symbols in the
// /proc/kallsyms format ("addr type name [module]") that open returns; it
// opens it again whenever names are needed.
func NewKernelSymbols(open func() (io.ReadCloser, error)) (*KernelSymbols, error) {
	k := &KernelSymbols{open: open, names: map[uint64]kernelName{}}
	addrs, err := k.pass(nil, nil)
	if err != nil {
		return nil, err
	}
	k.addrs = addrs
	return k, nil
}

// ParseKallsyms reads symbols from r, which is kept in memory to be read
// again for names (tests, and files other than the live /proc/kallsyms).
func ParseKallsyms(r io.Reader) (*KernelSymbols, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading kallsyms: %w", err)
	}
	return NewKernelSymbols(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

// pass reads the source once: it returns every text symbol's address,
// sorted and without duplicates, and when want is non-nil it fills got
// with the name of each wanted address (the last symbol in the file at
// that address, so aliases resolve as they always have).
func (k *KernelSymbols) pass(want map[uint64]bool, got map[uint64]kernelName) ([]uint64, error) {
	k.reads.Add(1)
	rc, err := k.open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// Sized from the last read, so a pass allocates its addresses once.
	addrs := make([]uint64, 0, len(k.addrs)+len(k.addrs)/32+64)
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	nonZero := false
	for sc.Scan() {
		// "ffffffff81000000 T _stext" or "... t name\t[module]"; parsed by
		// hand because this runs over ~120k lines.
		line := sc.Bytes()
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 || len(line) < sp+4 || line[sp+2] != ' ' {
			continue
		}
		if t := line[sp+1]; t != 't' && t != 'T' && t != 'w' && t != 'W' {
			continue
		}
		addr, ok := parseHex(line[:sp])
		if !ok {
			continue
		}
		if addr != 0 {
			nonZero = true
		}
		addrs = append(addrs, addr)
		if !want[addr] {
			continue
		}
		rest := line[sp+3:]
		name, mod := rest, []byte(nil)
		if i := bytes.IndexAny(rest, " \t"); i >= 0 {
			name, mod = rest[:i], bytes.Trim(bytes.TrimSpace(rest[i+1:]), "[]")
		}
		got[addr] = kernelName{string(name), string(mod)}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading kallsyms: %w", err)
	}
	if len(addrs) > 0 && !nonZero {
		return nil, ErrKallsymsRestricted
	}
	slices.Sort(addrs)
	return slices.Clip(slices.Compact(addrs)), nil
}

// parseHex parses a kallsyms address without allocating. (agent/signals
// has its own for /proc/net/tcp: flamegraph imports nothing of the
// module's, by the design's import rules.)
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}

// symbolAt is the address of the symbol holding addr in addrs.
func symbolAt(addrs []uint64, addr uint64) (uint64, bool) {
	if len(addrs) == 0 || addr < addrs[0] {
		return 0, false
	}
	i := sort.Search(len(addrs), func(i int) bool { return addrs[i] > addr }) - 1
	return addrs[i], true
}

// Resolve reads the names of the symbols that hold addrs and are not named
// yet, in one pass over the source. When the source's symbols have changed
// since they were read (a module loaded or unloaded), the addresses are
// taken from that pass and a second one reads the names they now need. A
// symbol that still has no name is remembered as unnamed, so it costs no
// further pass.
func (k *KernelSymbols) Resolve(addrs []uint64) error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.resolveLocked(addrs)
}

func (k *KernelSymbols) resolveLocked(addrs []uint64) error {
	for attempt := 0; ; attempt++ {
		want := k.missingLocked(addrs)
		if len(want) == 0 {
			return nil
		}
		if len(k.names)+len(want) > maxKernelNames {
			clear(k.names)
		}
		got := make(map[uint64]kernelName, len(want))
		fresh, err := k.pass(want, got)
		if err != nil {
			return err
		}
		if !slices.Equal(fresh, k.addrs) && attempt == 0 {
			// The symbols changed: names read before may belong to code
			// that is gone. Keep this pass's, and look again.
			k.addrs = fresh
			clear(k.names)
			maps.Copy(k.names, got)
			continue
		}
		for a := range want {
			k.names[a] = got[a] // the zero kernelName marks "no name"
		}
		return nil
	}
}

// missingLocked is the symbols holding addrs whose names are not known.
func (k *KernelSymbols) missingLocked(addrs []uint64) map[uint64]bool {
	var want map[uint64]bool
	for _, a := range addrs {
		s, ok := symbolAt(k.addrs, a)
		if !ok {
			continue
		}
		if _, known := k.names[s]; known {
			continue
		}
		if want == nil {
			want = map[uint64]bool{}
		}
		want[s] = true
	}
	return want
}

// Lookup returns the function containing addr and its module ("" for the
// kernel image itself). A symbol not named yet is read with a pass of its
// own: call Resolve with every address first when there are many.
func (k *KernelSymbols) Lookup(addr uint64) (name, module string, ok bool) {
	if k == nil {
		return "", "", false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.resolveLocked([]uint64{addr}); err != nil {
		return "", "", false
	}
	s, ok := symbolAt(k.addrs, addr)
	if !ok {
		return "", "", false
	}
	n := k.names[s]
	return n.name, n.module, n.name != ""
}

// Len is the number of distinct symbol addresses.
func (k *KernelSymbols) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.addrs)
}

// Reads is how many times the source was read: once to load, then once or
// twice for each Resolve that found a symbol not named yet.
func (k *KernelSymbols) Reads() uint64 {
	if k == nil {
		return 0
	}
	return k.reads.Load()
}

// Named is the number of symbols looked up and held now (those found
// without a name included).
func (k *KernelSymbols) Named() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.names)
}
