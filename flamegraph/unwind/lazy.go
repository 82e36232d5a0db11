package unwind

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"unsafe"
)

// lazyRows is a table read in place: .eh_frame_hdr's search table (one
// entry per function, 8 bytes here) is held, and the rows of a function are
// read from the file and interpreted when a sample first lands in it, then
// kept. A table built whole holds every row of every function: ONNX
// Runtime's 485k rows took 2.9 MB of the agent's heap (the agent samples
// itself), for the few hundred functions its samples ever land in; read in
// place its search table is 0.4 MB. It answers as the whole table would
// for a file whose only call frame information is .eh_frame
// (TestLazyTableAgreesWithTheWholeOne); a file with .debug_frame is built
// whole, since its rows merge both sections.
type lazyRows struct {
	file   io.ReaderAt // the binary, kept open
	ehAddr uint64      // virtual address of .eh_frame
	ehOff  int64       // its offset in the file
	ehSize uint64      // bytes of the file from ehOff that may hold it

	base uint64   // the first function's start
	pcs  []uint32 // each function's start - base, ascending
	fdes []uint32 // its FDE's address - ehAddr

	mu       sync.Mutex
	rows     map[int32]*fdeRows // by index in pcs; nil: unreadable
	cies     map[uint64]*cie    // by offset in .eh_frame
	nbytes   int                // of rows
	maxBytes int                // of rows kept (0: no cap beyond maxLazyFunctions)
}

// fdeRows are one function's rows.
type fdeRows struct {
	end   uint64
	pcs   []uint64
	rules []rule
}

// Bounds of what a lazy table keeps and reads: the functions whose rows
// are kept (past it they are read again), the CIEs, and the size of one
// entry read from the file.
const (
	maxLazyFunctions = 1 << 13
	maxLazyCIEs      = 256
	maxEntryBytes    = 1 << 20
	maxFunctionRows  = 1 << 16
)

// newLazyRows reads f's .eh_frame_hdr search table; file is the same
// binary, read again for each function's FDE. ok is false when f has no
// usable search table (then the table is built whole). maxBytes caps the
// table (0: no cap): a search table over it is ErrTooLarge, and the rows
// kept start again when they would pass what is left of it.
func newLazyRows(f *elf.File, file io.ReaderAt, limit uint64, maxBytes int) (l *lazyRows, ok bool, err error) {
	var h *EHFrameHdr
	if sec := f.Section(".eh_frame_hdr"); sec != nil && sec.Type != elf.SHT_NOBITS && sec.Flags&elf.SHF_COMPRESSED == 0 {
		data, err := sectionData(f, ".eh_frame_hdr", limit)
		if err != nil {
			return nil, false, nil
		}
		h, err = ParseEHFrameHdr(data, sec.Addr)
		if err != nil {
			return nil, false, nil
		}
	} else if h, err = ehFrameHdrSegment(f, limit); err != nil {
		return nil, false, nil
	}
	if h == nil || len(h.Table) == 0 {
		return nil, false, nil
	}
	if maxBytes > 0 && 8*len(h.Table) > maxBytes {
		return nil, false, fmt.Errorf("%w: %d functions (%d bytes)", ErrTooLarge, len(h.Table), maxBytes)
	}
	l = &lazyRows{file: file, ehAddr: h.EHFrame, base: h.Table[0].PC,
		rows: map[int32]*fdeRows{}, cies: map[uint64]*cie{}}
	if maxBytes > 0 {
		l.maxBytes = max(maxBytes-8*len(h.Table), 4<<10)
	}
	p, found := loadSegment(f, l.ehAddr)
	if !found {
		return nil, false, nil
	}
	l.ehOff = int64(p.Off + l.ehAddr - p.Vaddr)
	l.ehSize = p.Filesz - (l.ehAddr - p.Vaddr)
	l.pcs = make([]uint32, len(h.Table))
	l.fdes = make([]uint32, len(h.Table))
	for i, e := range h.Table {
		if e.PC-l.base >= 1<<32 || e.FDE < l.ehAddr || e.FDE-l.ehAddr >= min(l.ehSize, 1<<32) {
			return nil, false, nil // not what a search table of this file can say
		}
		l.pcs[i], l.fdes[i] = uint32(e.PC-l.base), uint32(e.FDE-l.ehAddr)
	}
	return l, true, nil
}

func (l *lazyRows) bytes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cap(l.pcs)*4 + cap(l.fdes)*4 + l.nbytes + int(unsafe.Sizeof(*l))
}

func (l *lazyRows) lookup(vaddr uint64) (Row, bool) {
	i := floorIndex(l.pcs, l.base, vaddr)
	if i < 0 {
		return Row{}, false
	}
	l.mu.Lock()
	fr, seen := l.rows[int32(i)]
	if !seen {
		fr = l.read(i)
		if len(l.rows) >= maxLazyFunctions || l.maxBytes > 0 && l.nbytes > l.maxBytes {
			clear(l.rows)
			l.nbytes = 0
		}
		l.rows[int32(i)] = fr
		if fr != nil {
			l.nbytes += 64 + len(fr.pcs)*(8+int(unsafe.Sizeof(rule{})))
		}
	}
	l.mu.Unlock()
	if fr == nil || vaddr >= fr.end {
		return Row{}, false
	}
	j := sort.Search(len(fr.pcs), func(j int) bool { return fr.pcs[j] > vaddr }) - 1
	if j < 0 || fr.rules[j].kind == KindNone {
		return Row{}, false
	}
	return fr.rules[j].row(fr.pcs[j]), true
}

// read interprets function i's FDE; nil when it cannot be read (its code
// then has no row, as an unreadable FDE has none in a whole table).
func (l *lazyRows) read(i int) *fdeRows {
	off := uint64(l.fdes[i])
	entry, body, err := l.entry(off)
	if err != nil {
		return nil
	}
	r := &reader{b: entry, off: body}
	var id uint64
	if body == 12 {
		id = r.u64()
	} else {
		id = uint64(r.u32())
	}
	if r.err != nil || id == 0 || id > off+uint64(body) {
		return nil // a CIE where an FDE should be, or a pointer before .eh_frame
	}
	c := l.cie(off + uint64(body) - id)
	if c == nil || c.signal {
		return nil
	}
	f, err := parseFDEBody(r, c, EHFrame, ptrBase{section: l.ehAddr + off})
	if err != nil || f.begin != l.base+uint64(l.pcs[i]) || f.end <= f.begin {
		return nil
	}
	in := &interp{maxRows: maxFunctionRows}
	if err := in.rowsForFDE(f); err != nil {
		return nil
	}
	pcs, rules, dict, ok := in.rows.compact()
	if !ok {
		return nil
	}
	fr := &fdeRows{end: f.end, pcs: make([]uint64, len(pcs)), rules: make([]rule, len(pcs))}
	for j := range pcs {
		fr.pcs[j], fr.rules[j] = in.base+uint64(pcs[j]), dict[rules[j]]
	}
	return fr
}

// cie reads and keeps the CIE at off in .eh_frame.
func (l *lazyRows) cie(off uint64) *cie {
	if c, ok := l.cies[off]; ok {
		return c
	}
	var c *cie
	if entry, _, err := l.entry(off); err == nil {
		c, _ = parseCIE(entry, EHFrame, 0)
	}
	if len(l.cies) < maxLazyCIEs {
		l.cies[off] = c
	}
	return c
}

var errEntry = errors.New("unreadable .eh_frame entry")

// entry reads the .eh_frame entry at off: its bytes from its length field
// on, and where its body starts (4, or 12 for a 64-bit length).
func (l *lazyRows) entry(off uint64) ([]byte, int, error) {
	if off+4 > l.ehSize {
		return nil, 0, errEntry
	}
	var head [12]byte
	n, err := l.file.ReadAt(head[:min(12, l.ehSize-off)], l.ehOff+int64(off))
	if n < 4 {
		return nil, 0, fmt.Errorf("%w at 0x%x: %v", errEntry, off, err)
	}
	length, body := uint64(binary.LittleEndian.Uint32(head[:4])), 4
	if length == 0xffffffff {
		if n < 12 {
			return nil, 0, errEntry
		}
		length, body = binary.LittleEndian.Uint64(head[4:12]), 12
	}
	if length == 0 || length > maxEntryBytes || off+uint64(body)+length > l.ehSize {
		return nil, 0, errEntry
	}
	buf := make([]byte, uint64(body)+length)
	if _, err := l.file.ReadAt(buf, l.ehOff+int64(off)); err != nil {
		return nil, 0, fmt.Errorf("%w at 0x%x: %v", errEntry, off, err)
	}
	return buf, body, nil
}
