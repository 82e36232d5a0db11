package unwind

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"unsafe"
)

// Table is the unwind table of one binary: rows sorted by address, in the
// binary's own virtual addresses (the caller turns a process address into
// one with the mapping's offset, as for symbols). A row is kept in 6 bytes:
// its address relative to the first row's, and the index of its rule in
// the table's dictionary of distinct rules (a binary has a few thousand at
// most: the CFA's register and offset, where RBP was saved). ONNX
// Runtime's 485k rows take 2.8 MiB.
type Table struct {
	base  uint64
	pcs   []uint32 // PC - base, ascending
	rules []uint16 // the row's rule, an index into dict
	dict  []rule
	// lazy, when set, answers instead of the rows above: the table is read
	// in place from its file (lazy.go).
	lazy *lazyRows
	// Skipped counts FDEs that could not be read (a bad CIE or FDE body, an
	// FDE overlapping another); their code has no row and unwinds by frame
	// pointer.
	Skipped int
}

// rule is what a row says, less its address.
type rule struct {
	cfaOff       int32
	rbpOff       int16
	kind         Kind
	pltThreshold uint8
}

// packedRow is a row while the table is built.
type packedRow struct {
	pc uint32 // PC - base
	rule
}

func (r rule) row(pc uint64) Row {
	return Row{PC: pc, CFAOff: r.cfaOff, RBPOff: r.rbpOff, Kind: r.kind, PLTThreshold: r.pltThreshold}
}

// rowBytes is the size of one row in a built table, ruleBytes of one rule
// in its dictionary.
const (
	rowBytes  = int(unsafe.Sizeof(uint32(0)) + unsafe.Sizeof(uint16(0)))
	ruleBytes = int(unsafe.Sizeof(rule{}))
)

// maxRules is how many distinct rules a table's dictionary indexes.
const maxRules = 1 << 16

// ErrTooLarge means a table would be larger than the cap given to the
// builder; the binary then unwinds by frame pointer.
var ErrTooLarge = errors.New("unwind table over its size cap")

// Bytes is the table's memory footprint, for the symboliser's cache budget.
func (t *Table) Bytes() int {
	if t == nil {
		return 0
	}
	if t.lazy != nil {
		return t.lazy.bytes()
	}
	return cap(t.pcs)*4 + cap(t.rules)*2 + cap(t.dict)*ruleBytes + int(unsafe.Sizeof(*t))
}

// ReadsInPlace reports whether the table reads its rows from its file
// when they are first looked up (it then keeps the file it was given).
func (t *Table) ReadsInPlace() bool { return t != nil && t.lazy != nil }

// Len is the number of rows (0 for a table read in place).
func (t *Table) Len() int { return len(t.pcs) }

// Rows returns a copy of the rows (for tests and tools; none for a table
// read in place).
func (t *Table) Rows() []Row {
	out := make([]Row, len(t.pcs))
	for i, pc := range t.pcs {
		out[i] = t.dict[t.rules[i]].row(t.base + uint64(pc))
	}
	return out
}

// Lookup returns the row in force at vaddr; ok is false where no FDE covers
// it.
func (t *Table) Lookup(vaddr uint64) (Row, bool) {
	if t == nil {
		return Row{}, false
	}
	if t.lazy != nil {
		return t.lazy.lookup(vaddr)
	}
	i := floorIndex(t.pcs, t.base, vaddr)
	if i < 0 {
		return Row{}, false
	}
	r := t.dict[t.rules[i]]
	if r.kind == KindNone {
		return Row{}, false
	}
	return r.row(t.base + uint64(t.pcs[i])), true
}

// floorIndex is the index of the last of pcs (offsets from base,
// ascending) at or below vaddr: the row, or the function, in force there.
// It is -1 where none is, and where vaddr is beyond the 4 GiB the offsets
// reach. A whole table searches its rows with it, a table read in place
// its functions.
func floorIndex(pcs []uint32, base, vaddr uint64) int {
	if vaddr < base || vaddr-base >= 1<<32 {
		return -1
	}
	pc := uint32(vaddr - base)
	// sort.Search's, without its closure: this runs for every frame.
	lo, hi := 0, len(pcs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if pcs[m] > pc {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo - 1
}

// CFI is one section of call frame information to build a table from.
type CFI struct {
	Kind Section
	Data []byte
	Addr uint64 // virtual address of Data[0] (.debug_frame: 0, unused)
}

// Build compiles the given sections into one table of at most maxBytes
// (0: no cap). Sections earlier in the list win where FDEs overlap, so pass
// .eh_frame before .debug_frame: the former is what the program's own
// exception handling uses, the latter may describe a stripped copy.
func Build(sections []CFI, maxBytes int) (*Table, error) {
	maxRows := int(^uint(0) >> 1)
	if maxBytes > 0 {
		maxRows = maxBytes / rowBytes
	}
	var fdes []fde
	var ranges []pcRange // covered ranges of earlier sections
	t := &Table{}
	var parseErrs []error
	for _, sec := range sections {
		// Counted first, so that the FDEs are held in arrays of their size:
		// grown by append, ONNX Runtime's took five times it.
		count := 0
		_, _ = parseFDEs(sec.Data, sec.Kind, sec.Addr, func(fde) error { count++; return nil })
		fdes = slices.Grow(fdes, min(count, maxRows))
		mine := make([]pcRange, 0, min(count, maxRows))
		skipped, err := parseFDEs(sec.Data, sec.Kind, sec.Addr, func(f fde) error {
			if overlaps(ranges, f.begin, f.end) {
				return nil
			}
			// Each FDE gives at least one row: a cap on rows caps FDEs.
			if len(fdes) >= maxRows {
				return ErrTooLarge
			}
			fdes = append(fdes, f)
			mine = append(mine, pcRange{f.begin, f.end})
			return nil
		})
		t.Skipped += skipped
		if errors.Is(err, ErrTooLarge) {
			return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, maxBytes)
		}
		if err != nil {
			parseErrs = append(parseErrs, err)
		}
		sort.Slice(mine, func(i, j int) bool { return mine[i].begin < mine[j].begin })
		ranges = mergeRanges(ranges, mine)
	}
	sort.SliceStable(fdes, func(i, j int) bool { return fdes[i].begin < fdes[j].begin })
	in := &interp{maxRows: maxRows}
	var end uint64
	for i, f := range fdes {
		if i > 0 && f.begin < end {
			t.Skipped++ // overlaps the previous FDE of the same section
			continue
		}
		if i > 0 && f.begin > end {
			if err := in.emitRow(Row{PC: end, Kind: KindNone}); err != nil {
				return nil, tooLarge(err, maxBytes)
			}
		}
		n := in.rows.len()
		if err := in.rowsForFDE(f); err != nil {
			if err := tooLarge(err, maxBytes); err != nil {
				return nil, err
			}
			in.rows.truncate(n)
			t.Skipped++
			if last := in.rows.last(); last != nil && last.kind != KindNone && i > 0 {
				// The FDE's range has no rule: mark it as a gap, not as
				// the previous function's last rule.
				if err := in.emitRow(Row{PC: f.begin, Kind: KindNone}); err != nil {
					return nil, tooLarge(err, maxBytes)
				}
			}
		}
		end = f.end
	}
	if in.rows.len() > 0 {
		if err := in.emitRow(Row{PC: end, Kind: KindNone}); err != nil {
			return nil, tooLarge(err, maxBytes)
		}
	}
	if in.rows.len() == 0 && len(parseErrs) > 0 {
		return nil, errors.Join(parseErrs...)
	}
	t.base = in.base
	var ok bool
	if t.pcs, t.rules, t.dict, ok = in.rows.compact(); !ok {
		return nil, fmt.Errorf("%w: more than %d distinct rules", ErrTooLarge, maxRules)
	}
	return t, nil
}

// emitRow appends a row as is (gaps), merging with a row at the same PC.
func (in *interp) emitRow(row Row) error {
	n := in.rows.len()
	if n == 0 && in.base == 0 {
		in.base = row.PC
	}
	if row.PC < in.base || row.PC-in.base >= 1<<32 {
		return errSpan
	}
	p := packedRow{uint32(row.PC - in.base), rule{row.CFAOff, row.RBPOff, row.Kind, row.PLTThreshold}}
	if last := in.rows.last(); last != nil {
		if last.pc == p.pc {
			*last = p
			return nil
		} else if last.rule == p.rule {
			return nil
		}
	}
	if n >= in.maxRows {
		return errRowLimit
	}
	in.rows.add(p)
	return nil
}

// errSpan is a row more than 4 GiB past the table's first (a packed row
// holds a 32-bit offset).
var errSpan = errors.New("code spans 4 GiB or more")

// tooLarge is the error of a table that cannot be built because of a cap
// (errRowLimit) or its span (errSpan), or nil for any other error.
func tooLarge(err error, maxBytes int) error {
	switch {
	case errors.Is(err, errRowLimit):
		return fmt.Errorf("%w (%d bytes)", ErrTooLarge, maxBytes)
	case errors.Is(err, errSpan):
		return fmt.Errorf("%w: %w", ErrTooLarge, errSpan)
	}
	return nil
}

type pcRange struct{ begin, end uint64 }

// overlaps reports whether [begin, end) meets any of the sorted, disjoint
// ranges.
func overlaps(rs []pcRange, begin, end uint64) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].end > begin })
	return i < len(rs) && rs[i].begin < end
}

func mergeRanges(a, b []pcRange) []pcRange {
	if len(b) == 0 {
		return a
	}
	all := append(append([]pcRange(nil), a...), b...)
	sort.Slice(all, func(i, j int) bool { return all[i].begin < all[j].begin })
	out := all[:1]
	for _, r := range all[1:] {
		last := &out[len(out)-1]
		if r.begin <= last.end {
			last.end = max(last.end, r.end)
			continue
		}
		out = append(out, r)
	}
	return out
}
