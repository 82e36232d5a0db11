package flamegraph

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/triage-agent/triage/flamegraph/unwind"
)

// ErrNotELF means a mapped file could not be read as ELF.
var ErrNotELF = errors.New("not an ELF file")

// ErrTooLarge means a file or section is over the size the symboliser reads.
var ErrTooLarge = errors.New("over the size limit")

// Binary is the symbol table of one executable or shared object, keyed by
// its build id in the symboliser's cache, with what else is read from it
// or from its separate debug file: DWARF inline frames and, on first use by
// the unwinder, its unwind table.
type Binary struct {
	BuildID string
	IsGo    bool
	// DebugFile is the separate debug file used (/usr/lib/debug/.build-id/…),
	// "" when none was found.
	DebugFile string
	// InlineErr says why inline frames are not available ("" when they are,
	// or when the binary simply has no DWARF).
	InlineErr string
	loads     []elf.ProgHeader // PT_LOAD segments, to turn file offsets into vaddrs
	syms      symTable         // function symbols (ELF .symtab / .dynsym, debug file's .symtab)
	gotab     *gosym.Table     // Go pclntab, parsed only for stripped Go binaries (names plus file:line)
	self      *selfImage       // the running executable: Go functions named by the runtime
	gotabSize int
	inline    *inlineIndex

	unwindOnce sync.Once
	unwind     *unwind.Table
	unwindErr  error
	unwindDone atomic.Bool // UnwindTable has run: unwind may be read
}

// Frame is one symbolised location.
type Frame struct {
	Function string
	File     string
	Line     int
}

// binaryOptions bounds what OpenBinary reads.
type binaryOptions struct {
	// debugDirs are the roots searched for a separate debug file by build
	// id: <dir>/.build-id/xx/yyyy.debug (the target's root first).
	debugDirs []string
	// maxSection caps each section read (after decompression).
	maxSection uint64
	// maxDWARF caps the DWARF sections read to build the inline index.
	maxDWARF uint64
	// maxIndex caps the inline index kept (bytes).
	maxIndex int
}

func (o binaryOptions) withDefaults() binaryOptions {
	if o.maxSection == 0 {
		o.maxSection = 64 << 20
	}
	if o.maxDWARF == 0 {
		o.maxDWARF = 64 << 20
	}
	if o.maxIndex == 0 {
		o.maxIndex = 8 << 20
	}
	return o
}

// OpenBinary parses the ELF file at path, with the host's /usr/lib/debug
// searched for its debug file.
func OpenBinary(path string) (*Binary, error) {
	return openBinary(path, binaryOptions{debugDirs: []string{"/usr/lib/debug"}})
}

func openBinary(path string, opts binaryOptions) (*Binary, error) {
	opts = opts.withDefaults()
	f, err := openELF(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := newBinary(f, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if b.IsGo {
		// Go keeps frame pointers and its names come from its own tables;
		// its DWARF (when not stripped) is large and not read.
		return b, nil
	}
	dbg, dbgPath := openDebugFile(b.BuildID, opts.debugDirs)
	if dbg != nil {
		defer dbg.Close()
		b.DebugFile = dbgPath
		// The debug file's .symtab adds the local functions a stripped
		// binary lost.
		var sb symBuilder
		if sb.addELF(f, opts.maxSection) == nil && sb.addELF(dbg, opts.maxSection) == nil {
			b.syms = sb.table()
		}
	}
	src := f
	if dbg != nil && dbg.Section(".debug_info") != nil {
		src = dbg
	}
	b.addInline(src, opts)
	return b, nil
}

// addInline reads the inline index from f's DWARF, if it has any.
func (b *Binary) addInline(f *elf.File, opts binaryOptions) {
	if f.Section(".debug_info") == nil {
		return
	}
	var err error
	if b.inline, err = readInlineIndex(f, opts); err != nil {
		b.InlineErr = err.Error()
	}
}

// openELFFile is openELF that also returns the open file, which the
// caller closes (closing the ELF file closes nothing).
func openELFFile(path string) (*elf.File, *os.File, error) {
	if err := checkRegular(path); err != nil {
		return nil, nil, err
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNotELF, err)
	}
	f, err := elf.NewFile(file)
	if err != nil {
		file.Close()
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrNotELF, path, err)
	}
	return f, file, nil
}

// checkRegular refuses anything but a regular file (a directory, FIFO or
// device) before it is opened.
func checkRegular(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotELF, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrNotELF, path)
	}
	return nil
}

// openELF opens a regular file as ELF; a directory, FIFO or device is
// refused before anything is read from it.
func openELF(path string) (*elf.File, error) {
	if err := checkRegular(path); err != nil {
		return nil, err
	}
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotELF, path, err)
	}
	return f, nil
}

// newBinary reads symbols and the build id of an opened ELF file. It reads
// other tenants' files, so a panic of the standard library's parsers on a
// crafted file is turned into an error rather than taking the agent down.
func newBinary(f *elf.File, opts binaryOptions) (b *Binary, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("%w: malformed ELF: %v", ErrNotELF, r)
		}
	}()
	b = &Binary{BuildID: buildID(f)}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			b.loads = append(b.loads, p.ProgHeader)
		}
	}
	// ELF function symbols first: they name Go and C functions alike and cost
	// far less memory than a parsed pclntab. Go's pclntab is the fallback
	// that still names stripped Go binaries (-ldflags=-s). The running
	// binary's Go functions are named by the runtime (selfnames.go): only
	// what it does not know is kept.
	pclntab := f.Section(".gopclntab")
	var sb symBuilder
	if im, ok := runningImage(); ok && pclntab != nil && b.BuildID == im.buildID {
		b.self = &im
		sb.skip = im.knowsPC
	}
	_ = sb.addELF(f, opts.maxSection) // too large: frames show as module+offset
	b.syms = sb.table()
	if pclntab != nil {
		b.IsGo = true
		// Stripped: no .symtab. Its .dynsym may still name a few C
		// functions (a cgo binary exports crosscall2 and _cgo_panic),
		// which must not stand in for the Go functions' names.
		stripped := f.Section(".symtab") == nil
		if stripped && b.self == nil && pclntab.Size <= opts.maxSection {
			if data, err := pclntab.Data(); err == nil && plausiblePclntab(data) {
				var text uint64
				if t := f.Section(".text"); t != nil {
					text = t.Addr
				}
				if tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text)); err == nil {
					b.gotab, b.gotabSize = tab, len(data)
				}
			}
		}
	}
	return b, nil
}

// plausiblePclntab checks a pclntab header before debug/gosym reads it:
// gosym allocates per function the count the header claims, so a crafted
// count would take the agent's memory. Every format since Go 1.2 has the
// magic in the first 4 bytes, the pointer size at byte 7 and the function
// count at byte 8, and each function takes at least 8 bytes of table.
func plausiblePclntab(data []byte) bool {
	if len(data) < 16 {
		return false
	}
	switch binary.LittleEndian.Uint32(data) {
	case 0xfffffffb, 0xfffffffa, 0xfffffff0, 0xfffffff1:
	default:
		return false
	}
	ptr := int(data[7])
	if ptr != 4 && ptr != 8 || len(data) < 8+ptr {
		return false
	}
	var n uint64
	if ptr == 8 {
		n = binary.LittleEndian.Uint64(data[8:])
	} else {
		n = uint64(binary.LittleEndian.Uint32(data[8:]))
	}
	return n <= uint64(len(data))/8
}

// readInlineIndex reads f's DWARF, within the size caps, into an inline
// index.
func readInlineIndex(f *elf.File, opts binaryOptions) (idx *inlineIndex, err error) {
	var total, info uint64
	for _, s := range f.Sections {
		if strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			total += s.Size
		}
		if s.Name == ".debug_info" || s.Name == ".zdebug_info" {
			info += s.Size
		}
	}
	if total > opts.maxDWARF {
		return nil, fmt.Errorf("inline frames off: %w: DWARF sections are %d MiB (limit %d MiB)", ErrTooLarge, total>>20, opts.maxDWARF>>20)
	}
	defer func() {
		if r := recover(); r != nil {
			idx, err = nil, fmt.Errorf("inline frames off: malformed DWARF: %v", r)
		}
	}()
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("inline frames off: %w", err)
	}
	idx, err = buildInlineIndex(d, int(info), opts.maxIndex)
	if err != nil {
		return nil, fmt.Errorf("inline frames off: %w", err)
	}
	return idx, nil
}

// openDebugFile finds the separate debug file of a build id under each
// root's .build-id directory (Debian's -dbgsym and -dbg packages, Fedora's
// debuginfo). Only a file whose own build id matches is used.
func openDebugFile(id string, dirs []string) (*elf.File, string) {
	if len(id) < 4 || !isHex(id) {
		return nil, ""
	}
	for _, dir := range dirs {
		p := fmt.Sprintf("%s/.build-id/%s/%s.debug", dir, id[:2], id[2:])
		f, err := openELF(p)
		if err != nil {
			continue
		}
		if buildID(f) != id {
			f.Close()
			continue
		}
		return f, p
	}
	return nil, ""
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// buildID returns the GNU build id note, else the Go build id, else "".
func buildID(f *elf.File) string {
	for _, name := range []string{".note.gnu.build-id", ".note.go.buildid"} {
		sec := f.Section(name)
		if sec == nil || sec.Size > 4096 {
			continue
		}
		data, err := sec.Data()
		if err != nil || len(data) < 16 {
			continue
		}
		nameSz := f.ByteOrder.Uint32(data[0:4])
		descSz := f.ByteOrder.Uint32(data[4:8])
		off := 12 + uint64(align4(nameSz))
		if off+uint64(descSz) > uint64(len(data)) {
			continue
		}
		desc := data[off : off+uint64(descSz)]
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

// Lookup names the function at virtual address vaddr (the outermost one
// where code was inlined; Frames gives them all).
func (b *Binary) Lookup(vaddr uint64) (Frame, bool) {
	if b.self != nil {
		if fr, ok := b.self.runtimeFrame(vaddr); ok {
			fr.Function = strings.TrimSuffix(fr.Function, ".abi0")
			return fr, true
		}
	}
	if b.gotab != nil {
		file, line, fn := b.gotab.PCToLine(vaddr)
		if fn != nil {
			return Frame{Function: fn.Name, File: file, Line: line}, true
		}
	}
	name, ok := b.syms.lookup(vaddr)
	if !ok {
		return Frame{}, false
	}
	if b.IsGo {
		// The linker's ABI wrappers' suffix is noise, and pclntab (used for
		// stripped binaries) does not have it: names read the same either way.
		return Frame{Function: strings.TrimSuffix(name, ".abi0")}, true
	}
	return Frame{Function: demangleName(name)}, true
}

// Frames names the functions at vaddr, innermost first: with DWARF, each
// inlined function and then the function it was inlined into (whose name
// the symbol table confirms); else the one function of the symbol table.
func (b *Binary) Frames(vaddr uint64) []Frame {
	sym, symOK := b.Lookup(vaddr)
	fs := b.inline.frames(vaddr)
	if len(fs) == 0 {
		if !symOK {
			return nil
		}
		return []Frame{sym}
	}
	// DWARF may not name the outermost function (a subprogram without a
	// name attribute): the symbol table does.
	if last := &fs[len(fs)-1]; last.Function == "" && symOK {
		last.Function = sym.Function
	}
	for i := range fs {
		if fs[i].Function == "" {
			fs[i].Function = "[inlined]"
		}
	}
	return fs
}

// UnwindTable returns the binary's unwind table, building it on first use
// from the first of paths that opens (each must name this same file: the
// symboliser passes the ways to reach the mapping it read the binary from).
// maxBytes caps the table.
func (b *Binary) UnwindTable(paths, debugDirs []string, maxBytes int) (*unwind.Table, error) {
	b.unwindOnce.Do(func() {
		defer b.unwindDone.Store(true)
		var f *elf.File
		var file *os.File
		b.unwindErr = errors.New("no path to the binary")
		for _, p := range paths {
			if f, file, b.unwindErr = openELFFile(p); b.unwindErr == nil {
				break
			}
		}
		if f == nil {
			return
		}
		dbg, _ := openDebugFile(b.BuildID, debugDirs)
		if dbg != nil {
			defer dbg.Close()
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					b.unwindErr = fmt.Errorf("%w: malformed ELF: %v", unwind.ErrBadCFI, r)
				}
			}()
			// Read in place where the file allows it: the table then keeps
			// the file open and reads a function's rows when a sample
			// first lands in it (flamegraph/unwind/lazy.go).
			b.unwind, b.unwindErr = unwind.FromELF(f, dbg, unwind.ELFOptions{MaxTableBytes: maxBytes, File: file})
		}()
		if !b.unwind.ReadsInPlace() {
			file.Close()
		}
	})
	return b.unwind, b.unwindErr
}

// Bytes estimates the binary's memory in the symboliser's cache: symbols,
// pclntab, inline index and unwind table.
func (b *Binary) Bytes() int {
	n := int(unsafe.Sizeof(*b)) + b.syms.bytes() + b.gotabSize
	if b.inline != nil {
		n += b.inline.bytes
	}
	if b.unwindDone.Load() {
		n += b.unwind.Bytes() // a table read in place grows as functions are read
	}
	return n
}
