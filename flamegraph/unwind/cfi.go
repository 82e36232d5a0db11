package unwind

import (
	"errors"
	"fmt"
)

// Section says which flavour of call frame information a byte slice holds.
// The two differ in how a CIE is marked and how an FDE names its CIE, and
// .debug_frame has no pointer encodings (addresses are absolute).
type Section int

const (
	EHFrame    Section = iota // .eh_frame (GNU, LSB)
	DebugFrame                // .debug_frame (DWARF 2-5)
)

func (s Section) String() string {
	if s == DebugFrame {
		return ".debug_frame"
	}
	return ".eh_frame"
}

// ErrBadCFI wraps every parse error of call frame information.
var ErrBadCFI = errors.New("bad call frame information")

// cie is a parsed Common Information Entry.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	fdeEnc    byte // pointer encoding of the FDEs' addresses
	augData   bool // 'z': FDEs carry an augmentation length
	signal    bool // 'S': a signal trampoline's frame
	addrSize  int
	initial   []byte
}

// fde is one Frame Description Entry: the code range it covers and the CFA
// program that describes it.
type fde struct {
	begin, end uint64
	cie        *cie
	program    []byte
}

// maxCIEs bounds the CIE cache of one section (real files have a handful;
// a crafted one could name a new CIE per FDE).
const maxCIEs = 4096

// parseFDEs calls emit for every FDE of a section whose bytes are data and
// whose first byte is at virtual address addr, and returns how many FDEs it
// skipped (a CIE or FDE body it cannot read: the entry's length still says
// where the next one starts). An entry length that runs past the section
// ends the walk with an error, since nothing after it can be trusted; FDEs
// already emitted stay valid.
func parseFDEs(data []byte, kind Section, addr uint64, emit func(fde) error) (skipped int, err error) {
	cies := map[int]*cie{}
	badCIEs := map[int]bool{}
	base := ptrBase{section: addr}
	off := 0
	for off < len(data) {
		r := &reader{b: data, off: off}
		length := uint64(r.u32())
		if r.err != nil {
			return skipped, fmt.Errorf("%w: %s entry at 0x%x: %w", ErrBadCFI, kind, off, r.err)
		}
		if length == 0 {
			if kind == EHFrame {
				return skipped, nil // the terminator
			}
			off = r.off
			continue
		}
		idSize := 4
		if length == 0xffffffff {
			length = r.u64()
			idSize = 8
		}
		bodyStart := r.off
		if r.err != nil || length > uint64(len(data)-bodyStart) {
			return skipped, fmt.Errorf("%w: %s entry at 0x%x runs past the section", ErrBadCFI, kind, off)
		}
		end := bodyStart + int(length)
		r.b = data[:end]
		var id uint64
		if idSize == 8 {
			id = r.u64()
		} else {
			id = uint64(r.u32())
		}
		if r.err != nil {
			return skipped, fmt.Errorf("%w: %s entry at 0x%x: %w", ErrBadCFI, kind, off, r.err)
		}
		off = end
		if isCIE(kind, id, idSize) {
			continue
		}
		cieOff := -1
		if kind == EHFrame && id <= uint64(bodyStart) {
			// The CIE pointer is the distance back from the field itself.
			cieOff = bodyStart - int(id)
		} else if kind == DebugFrame && id < uint64(len(data)) {
			cieOff = int(id)
		}
		c := cies[cieOff]
		if c == nil {
			if cieOff < 0 || badCIEs[cieOff] {
				skipped++
				continue
			}
			var err error
			if c, err = parseCIE(data, kind, cieOff); err != nil {
				if len(badCIEs) < maxCIEs {
					badCIEs[cieOff] = true
				}
				skipped++
				continue
			}
			if len(cies) < maxCIEs {
				cies[cieOff] = c
			}
		}
		f, err := parseFDEBody(r, c, kind, base)
		if err != nil {
			skipped++
			continue
		}
		if f.end > f.begin && !c.signal {
			if err := emit(f); err != nil {
				return skipped, err
			}
		}
	}
	return skipped, nil
}

func isCIE(kind Section, id uint64, idSize int) bool {
	if kind == EHFrame {
		return id == 0
	}
	if idSize == 8 {
		return id == ^uint64(0)
	}
	return id == 0xffffffff
}

func parseFDEBody(r *reader, c *cie, kind Section, base ptrBase) (fde, error) {
	var f fde
	f.cie = c
	if kind == EHFrame {
		f.begin = r.pointer(c.fdeEnc, base)
		f.end = f.begin + r.pointerValue(c.fdeEnc&0x0f)
		if c.augData {
			r.bytes(r.uleb()) // the LSDA pointer: not needed to unwind
		}
	} else {
		f.begin = r.address(c.addrSize)
		f.end = f.begin + r.address(c.addrSize)
	}
	if r.err != nil {
		return f, r.err
	}
	if f.end < f.begin {
		return f, errors.New("address range wraps")
	}
	f.program = r.b[r.off:]
	return f, nil
}

func (r *reader) address(size int) uint64 {
	if size == 4 {
		return uint64(r.u32())
	}
	return r.u64()
}

// parseCIE parses the CIE whose entry starts at off.
func parseCIE(data []byte, kind Section, off int) (*cie, error) {
	if off < 0 || off >= len(data) {
		return nil, errTruncated
	}
	r := &reader{b: data, off: off}
	length := uint64(r.u32())
	idSize := 4
	if length == 0xffffffff {
		length = r.u64()
		idSize = 8
	}
	if r.err != nil || length > uint64(len(data)-r.off) {
		return nil, errTruncated
	}
	r.b = data[:r.off+int(length)]
	var id uint64
	if idSize == 8 {
		id = r.u64()
	} else {
		id = uint64(r.u32())
	}
	if !isCIE(kind, id, idSize) {
		return nil, errors.New("not a CIE")
	}
	c := &cie{addrSize: 8, fdeEnc: peAbsptr}
	version := r.u8()
	if version != 1 && version != 3 && version != 4 {
		return nil, fmt.Errorf("CIE version %d", version)
	}
	aug := r.cstring()
	if version == 4 {
		c.addrSize = int(r.u8())
		if seg := r.u8(); seg != 0 {
			return nil, fmt.Errorf("segment selector size %d", seg)
		}
		if c.addrSize != 4 && c.addrSize != 8 {
			return nil, fmt.Errorf("address size %d", c.addrSize)
		}
	}
	c.codeAlign = r.uleb()
	c.dataAlign = r.sleb()
	if version == 1 {
		c.raReg = uint64(r.u8())
	} else {
		c.raReg = r.uleb()
	}
	if err := c.parseAugmentation(r, aug); err != nil {
		return nil, err
	}
	if r.err != nil {
		return nil, r.err
	}
	c.initial = r.b[r.off:]
	return c, nil
}

// parseAugmentation reads the 'z' augmentation data: the FDE pointer
// encoding ('R'), the personality routine ('P', skipped), the LSDA encoding
// ('L', skipped) and the signal-frame mark ('S'). An augmentation without
// 'z' other than "" cannot be skipped safely, so it is an error.
func (c *cie) parseAugmentation(r *reader, aug string) error {
	if aug == "" {
		return nil
	}
	if aug[0] != 'z' {
		if aug == "eh" { // ancient GCC: an extra pointer follows
			r.u64()
			return r.err
		}
		return fmt.Errorf("augmentation %q", aug)
	}
	c.augData = true
	n := r.uleb()
	ad := &reader{b: r.bytes(n)}
	if r.err != nil {
		return r.err
	}
	for _, ch := range aug[1:] {
		switch ch {
		case 'R':
			c.fdeEnc = ad.u8()
		case 'P':
			// Only its size matters: the personality routine is for
			// exceptions, not for unwinding a sample.
			ad.pointerValue(ad.u8() & 0x0f)
		case 'L':
			ad.u8()
		case 'S':
			c.signal = true
		case 'B', 'G': // AArch64 pointer authentication, memory tagging: no data
		default:
			// Unknown letters after 'z' are legal: the length lets us skip
			// the rest, but the FDE encoding may be unknown from here on.
			return ad.err
		}
	}
	return ad.err
}
