package flamegraph

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrNotELF means a mapped file could not be read as ELF.
var ErrNotELF = errors.New("not an ELF file")

// Binary is the symbol table of one executable or shared object, keyed by
// its build id in the symboliser's cache.
type Binary struct {
	BuildID string
	IsGo    bool
	loads   []elf.ProgHeader // PT_LOAD segments, to turn file offsets into vaddrs
	syms    []elfSym         // sorted function symbols (ELF .symtab / .dynsym)
	gotab   *gosym.Table     // Go pclntab, parsed only for stripped Go binaries (names plus file:line)
}

type elfSym struct {
	addr, size uint64
	name       string
}

// Frame is one symbolised location.
type Frame struct {
	Function string
	File     string
	Line     int
}

// OpenBinary parses the ELF file at path.
func OpenBinary(path string) (*Binary, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotELF, path, err)
	}
	defer f.Close()
	b := &Binary{BuildID: buildID(f)}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			b.loads = append(b.loads, p.ProgHeader)
		}
	}
	// ELF function symbols first: they name Go and C functions alike and cost
	// far less memory than a parsed pclntab. Go's pclntab is the fallback
	// that still names stripped Go binaries (-ldflags=-s).
	b.syms = functionSymbols(f)
	if sec := f.Section(".gopclntab"); sec != nil {
		b.IsGo = true
		// The linker's ABI wrappers' suffix is noise, and pclntab (used for
		// stripped binaries) does not have it: keep names the same either way.
		for i := range b.syms {
			b.syms[i].name = strings.TrimSuffix(b.syms[i].name, ".abi0")
		}
	}
	if sec := f.Section(".gopclntab"); sec != nil && len(b.syms) == 0 {
		if data, err := sec.Data(); err == nil {
			var text uint64
			if t := f.Section(".text"); t != nil {
				text = t.Addr
			}
			if tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text)); err == nil {
				b.gotab = tab
			}
		}
	}
	return b, nil
}

func functionSymbols(f *elf.File) []elfSym {
	var out []elfSym
	add := func(syms []elf.Symbol) {
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
				name := s.Name
				if i := strings.IndexByte(name, '@'); i > 0 { // versioned dynsym: memcpy@@GLIBC_2.14
					name = name[:i]
				}
				out = append(out, elfSym{s.Value, s.Size, name})
			}
		}
	}
	if syms, err := f.Symbols(); err == nil {
		add(syms)
	}
	if syms, err := f.DynamicSymbols(); err == nil {
		add(syms)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].addr != out[j].addr {
			return out[i].addr < out[j].addr
		}
		return out[i].size > out[j].size
	})
	return out
}

// buildID returns the GNU build id note, else the Go build id, else "".
func buildID(f *elf.File) string {
	for _, name := range []string{".note.gnu.build-id", ".note.go.buildid"} {
		sec := f.Section(name)
		if sec == nil {
			continue
		}
		data, err := sec.Data()
		if err != nil || len(data) < 16 {
			continue
		}
		nameSz := f.ByteOrder.Uint32(data[0:4])
		descSz := f.ByteOrder.Uint32(data[4:8])
		off := 12 + align4(nameSz)
		if uint64(off)+uint64(descSz) > uint64(len(data)) {
			continue
		}
		desc := data[off : off+descSz]
		if name == ".note.go.buildid" {
			return string(bytes.TrimRight(desc, "\x00"))
		}
		return hex.EncodeToString(desc)
	}
	return ""
}

func align4(n uint32) uint32 { return (n + 3) &^ 3 }

// VAddr turns a file offset into the virtual address the ELF file's symbols
// use (PIE and shared objects are mapped at a random base; the offset within
// the file is what stays fixed).
func (b *Binary) VAddr(fileOffset uint64) (uint64, bool) {
	for _, p := range b.loads {
		if fileOffset >= p.Off && fileOffset < p.Off+p.Filesz {
			return fileOffset - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// Lookup names the function at virtual address vaddr.
func (b *Binary) Lookup(vaddr uint64) (Frame, bool) {
	if b.gotab != nil {
		file, line, fn := b.gotab.PCToLine(vaddr)
		if fn != nil {
			return Frame{Function: fn.Name, File: file, Line: line}, true
		}
	}
	s := b.syms
	i := sort.Search(len(s), func(i int) bool { return s[i].addr > vaddr }) - 1
	if i < 0 {
		return Frame{}, false
	}
	// Symbols of size 0 (hand-written assembly) cover up to the next one.
	if s[i].size != 0 && vaddr >= s[i].addr+s[i].size {
		return Frame{}, false
	}
	return Frame{Function: s[i].name}, true
}
