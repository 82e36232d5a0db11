package unwind

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
)

// ErrNoCFI means a binary has no call frame information the unwinder can
// read (no .eh_frame, .eh_frame_hdr or .debug_frame).
var ErrNoCFI = errors.New("no .eh_frame or .debug_frame")

// ErrSectionTooLarge means a section is over the size the loader reads.
var ErrSectionTooLarge = errors.New("section over the size limit")

// ELFOptions bounds FromELF.
type ELFOptions struct {
	// MaxTableBytes caps the built table (0: no cap).
	MaxTableBytes int
	// MaxSectionBytes caps each section read (after decompression;
	// default 64 MiB).
	MaxSectionBytes uint64
	// File, when set, is the same file as FromELF's f, kept open by the
	// caller for the table's life: a file whose call frame information is
	// .eh_frame alone, with its search table (.eh_frame_hdr), then gets a
	// table read in place, each function's rows read from File when a
	// lookup first needs them (lazy.go). Nil: every row is built now.
	File io.ReaderAt
}

// FromELF builds the unwind table of an ELF file from its .eh_frame (found
// by section name, else through PT_GNU_EH_FRAME and .eh_frame_hdr for files
// without section headers) and its .debug_frame, or that of debug (the
// separate debug file from /usr/lib/debug, which may be nil).
func FromELF(f, debug *elf.File, opts ELFOptions) (*Table, error) {
	if opts.MaxSectionBytes == 0 {
		opts.MaxSectionBytes = 64 << 20
	}
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("%w: machine %v (x86-64 only)", ErrNoCFI, f.Machine)
	}
	if opts.File != nil && !hasDebugFrame(f) && !hasDebugFrame(debug) {
		l, ok, err := newLazyRows(f, opts.File, opts.MaxSectionBytes, opts.MaxTableBytes)
		if err != nil {
			return nil, err
		}
		if ok {
			return &Table{lazy: l}, nil
		}
	}
	var secs []CFI
	var errs []error
	if data, addr, err := ehFrame(f, opts.MaxSectionBytes); err != nil {
		errs = append(errs, err)
	} else if data != nil {
		secs = append(secs, CFI{Kind: EHFrame, Data: data, Addr: addr})
	}
	for _, file := range []*elf.File{f, debug} {
		if file == nil {
			continue
		}
		if data, err := sectionData(file, ".debug_frame", opts.MaxSectionBytes); err != nil {
			errs = append(errs, err)
		} else if data != nil {
			secs = append(secs, CFI{Kind: DebugFrame, Data: data})
			break
		}
	}
	if len(secs) == 0 {
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return nil, ErrNoCFI
	}
	return Build(secs, opts.MaxTableBytes)
}

// hasDebugFrame reports whether f (nil: no file) has a .debug_frame, whose
// rows a table merges with .eh_frame's.
func hasDebugFrame(f *elf.File) bool {
	if f == nil {
		return false
	}
	sec := f.Section(".debug_frame")
	return sec != nil && sec.Type != elf.SHT_NOBITS
}

// sectionData reads a section (decompressing it if needed) within limit;
// nil, nil when the file has no such section.
func sectionData(f *elf.File, name string, limit uint64) ([]byte, error) {
	sec := f.Section(name)
	if sec == nil || sec.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	// For a compressed section Size is the decompressed size; reading more
	// than it from the decompressor is capped below anyway.
	if sec.Size > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes", ErrSectionTooLarge, name, sec.Size)
	}
	data, err := io.ReadAll(io.LimitReader(sec.Open(), int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if uint64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s decompresses past %d bytes", ErrSectionTooLarge, name, limit)
	}
	return data, nil
}

// ehFrame returns .eh_frame's bytes and virtual address.
func ehFrame(f *elf.File, limit uint64) ([]byte, uint64, error) {
	if sec := f.Section(".eh_frame"); sec != nil {
		data, err := sectionData(f, ".eh_frame", limit)
		return data, sec.Addr, err
	}
	// No section headers (stripped with sstrip, some loaders' output):
	// PT_GNU_EH_FRAME is .eh_frame_hdr, which says where .eh_frame is.
	h, err := ehFrameHdrSegment(f, limit)
	if h == nil || err != nil {
		return nil, 0, err
	}
	// .eh_frame has no size of its own here: read to the end of its
	// segment; the parser stops at the zero terminator.
	data, err := readToSegmentEnd(f, h.EHFrame, limit)
	return data, h.EHFrame, err
}

// ehFrameHdrSegment reads and parses .eh_frame_hdr through the first
// PT_GNU_EH_FRAME segment; nil, nil when the file has none.
func ehFrameHdrSegment(f *elf.File, limit uint64) (*EHFrameHdr, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_GNU_EH_FRAME {
			continue
		}
		hdr, err := readSegment(f, p.Vaddr, p.Filesz, limit)
		if err != nil {
			return nil, err
		}
		return ParseEHFrameHdr(hdr, p.Vaddr)
	}
	return nil, nil
}

// loadSegment is the first PT_LOAD segment whose file bytes hold vaddr.
func loadSegment(f *elf.File, vaddr uint64) (*elf.Prog, bool) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && vaddr >= p.Vaddr && vaddr-p.Vaddr < p.Filesz {
			return p, true
		}
	}
	return nil, false
}

func readSegment(f *elf.File, vaddr, size, limit uint64) ([]byte, error) {
	if size > limit {
		return nil, fmt.Errorf("%w: segment at 0x%x is %d bytes", ErrSectionTooLarge, vaddr, size)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && vaddr >= p.Vaddr && vaddr-p.Vaddr < p.Filesz && size <= p.Filesz-(vaddr-p.Vaddr) {
			buf := make([]byte, size)
			if _, err := p.ReadAt(buf, int64(vaddr-p.Vaddr)); err != nil {
				return nil, fmt.Errorf("reading segment at 0x%x: %w", vaddr, err)
			}
			return buf, nil
		}
	}
	return nil, fmt.Errorf("%w: address 0x%x is in no loaded segment", ErrNoCFI, vaddr)
}

func readToSegmentEnd(f *elf.File, vaddr, limit uint64) ([]byte, error) {
	if p, ok := loadSegment(f, vaddr); ok {
		return readSegment(f, vaddr, min(p.Filesz-(vaddr-p.Vaddr), limit), limit)
	}
	return nil, fmt.Errorf("%w: .eh_frame at 0x%x is in no loaded segment", ErrNoCFI, vaddr)
}
