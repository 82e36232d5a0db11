package flamegraph

import (
	"debug/elf"
	"fmt"
	"sort"
	"strings"
	"unsafe"
)

// symTable is a binary's function symbols, sorted by address, stored
// compactly: 16 bytes per symbol plus its name in one shared string (the
// symbols of a large C++ binary such as node, 86k functions with long
// mangled names, take ~8 MiB this way, about half of a slice of strings).
type symTable struct {
	ents  []symEnt
	names string // names, each ended by a NUL
}

type symEnt struct {
	addr uint64
	size uint32 // 0: up to the next symbol (hand-written assembly)
	name uint32 // offset in names
}

// symBuilder collects symbols before they are sorted into a symTable.
type symBuilder struct {
	ents  []symEnt
	names strings.Builder
	seen  map[symKey]bool
	// skip, when set, leaves out the symbols at addresses it names some
	// other way.
	skip func(addr uint64) bool
}

type symKey struct {
	addr uint64
	name string
}

func (b *symBuilder) add(addr, size uint64, name string) {
	if b.seen == nil {
		b.seen = map[symKey]bool{}
	}
	if i := strings.IndexByte(name, '@'); i > 0 { // versioned dynsym: memcpy@@GLIBC_2.14
		name = name[:i]
	}
	k := symKey{addr, name}
	if addr == 0 || b.seen[k] || b.skip != nil && b.skip(addr) || uint64(b.names.Len())+uint64(len(name)) >= 1<<32 {
		return
	}
	b.seen[k] = true
	b.ents = append(b.ents, symEnt{addr: addr, size: uint32(min(size, 1<<32-1)), name: uint32(b.names.Len())})
	b.names.WriteString(name)
	b.names.WriteByte(0)
}

// addELF adds the function symbols of f's .symtab and .dynsym, refusing
// tables over limit bytes.
func (b *symBuilder) addELF(f *elf.File, limit uint64) error {
	for _, name := range []string{".symtab", ".strtab", ".dynsym", ".dynstr"} {
		if sec := f.Section(name); sec != nil && sec.Size > limit {
			return fmt.Errorf("%w: %s is %d bytes", ErrTooLarge, name, sec.Size)
		}
	}
	for _, sec := range f.Sections {
		if (sec.Type == elf.SHT_SYMTAB || sec.Type == elf.SHT_DYNSYM) && sec.Size > limit {
			return fmt.Errorf("%w: %s is %d bytes", ErrTooLarge, sec.Name, sec.Size)
		}
	}
	for _, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, err := read()
		if err != nil {
			continue
		}
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				b.add(s.Value, s.Size, s.Name)
			}
		}
	}
	return nil
}

func (b *symBuilder) table() symTable {
	ents := append([]symEnt(nil), b.ents...) // trim the appends' spare capacity
	sort.Slice(ents, func(i, j int) bool {
		if ents[i].addr != ents[j].addr {
			return ents[i].addr < ents[j].addr
		}
		return ents[i].size > ents[j].size
	})
	// The builder's buffer grew by doubling: the table keeps an exact copy,
	// so the cache holds (and counts) the names, not up to twice them.
	return symTable{ents: ents, names: strings.Clone(b.names.String())}
}

func (t *symTable) name(e symEnt) string {
	s := t.names[e.name:]
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// lookup names the function at vaddr.
func (t *symTable) lookup(vaddr uint64) (string, bool) {
	s := t.ents
	i := sort.Search(len(s), func(i int) bool { return s[i].addr > vaddr }) - 1
	if i < 0 {
		return "", false
	}
	if s[i].size != 0 && vaddr >= s[i].addr+uint64(s[i].size) {
		return "", false
	}
	return t.name(s[i]), true
}

func (t *symTable) len() int { return len(t.ents) }

func (t *symTable) bytes() int {
	return cap(t.ents)*int(unsafe.Sizeof(symEnt{})) + len(t.names)
}

// each calls fn for every symbol (tests, fuzzing).
func (t *symTable) each(fn func(addr, size uint64, name string)) {
	for _, e := range t.ents {
		fn(e.addr, uint64(e.size), t.name(e))
	}
}
