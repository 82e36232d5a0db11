package unwind

import (
	"fmt"
)

// HdrEntry is one entry of .eh_frame_hdr's binary search table: the first
// address an FDE covers and the FDE's address.
type HdrEntry struct{ PC, FDE uint64 }

// EHFrameHdr is a parsed .eh_frame_hdr (LSB): where .eh_frame is, and the
// sorted table the runtime's own unwinder searches.
type EHFrameHdr struct {
	EHFrame uint64 // virtual address of .eh_frame
	Table   []HdrEntry
}

// maxHdrEntries bounds the table (libxul has ~300k FDEs; a crafted count
// must not allocate more than the section can hold anyway).
const maxHdrEntries = 1 << 22

// ParseEHFrameHdr parses .eh_frame_hdr bytes whose first byte is at virtual
// address addr.
func ParseEHFrameHdr(data []byte, addr uint64) (*EHFrameHdr, error) {
	r := &reader{b: data}
	base := ptrBase{section: addr, data: addr}
	if v := r.u8(); v != 1 {
		if r.err != nil {
			return nil, fmt.Errorf("%w: .eh_frame_hdr: %w", ErrBadCFI, r.err)
		}
		return nil, fmt.Errorf("%w: .eh_frame_hdr version %d", ErrBadCFI, v)
	}
	ptrEnc, countEnc, tableEnc := r.u8(), r.u8(), r.u8()
	h := &EHFrameHdr{EHFrame: r.pointer(ptrEnc, base)}
	if r.err != nil {
		return nil, fmt.Errorf("%w: .eh_frame_hdr: %w", ErrBadCFI, r.err)
	}
	if countEnc == peOmit || tableEnc == peOmit {
		return h, nil
	}
	count := r.pointer(countEnc, base)
	if r.err != nil {
		return nil, fmt.Errorf("%w: .eh_frame_hdr: %w", ErrBadCFI, r.err)
	}
	// Each entry takes at least two bytes, so count is bounded by the data.
	if count > maxHdrEntries || count > uint64(len(data)-r.off)/2 {
		return nil, fmt.Errorf("%w: .eh_frame_hdr claims %d entries in %d bytes", ErrBadCFI, count, len(data))
	}
	h.Table = make([]HdrEntry, 0, count)
	for i := uint64(0); i < count; i++ {
		pc := r.pointer(tableEnc, base)
		f := r.pointer(tableEnc, base)
		if r.err != nil {
			return nil, fmt.Errorf("%w: .eh_frame_hdr entry %d: %w", ErrBadCFI, i, r.err)
		}
		if i > 0 && pc < h.Table[i-1].PC {
			return nil, fmt.Errorf("%w: .eh_frame_hdr table not sorted at entry %d", ErrBadCFI, i)
		}
		h.Table = append(h.Table, HdrEntry{pc, f})
	}
	return h, nil
}
