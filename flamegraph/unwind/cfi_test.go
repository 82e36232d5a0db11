package unwind

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// ehBuilder assembles a small .eh_frame: one CIE (x86-64 defaults, FDE
// addresses pcrel|sdata4) and FDEs whose programs the test writes.
type ehBuilder struct {
	addr uint64 // virtual address of the section
	b    []byte
}

func newEHBuilder(addr uint64) *ehBuilder {
	e := &ehBuilder{addr: addr}
	body := []byte{0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b,
		0x0c, 7, 8, // DW_CFA_def_cfa rsp+8
		0x90, 1, // DW_CFA_offset ra at cfa-8
		0, 0} // padding nops
	e.entry(body)
	return e
}

func (e *ehBuilder) entry(body []byte) {
	e.b = binary.LittleEndian.AppendUint32(e.b, uint32(len(body)))
	e.b = append(e.b, body...)
}

// fde adds an FDE for [begin, begin+size) with the given CFA program.
func (e *ehBuilder) fde(begin uint64, size uint32, prog ...byte) {
	start := len(e.b)
	body := binary.LittleEndian.AppendUint32(nil, uint32(start+4)) // back to the CIE at 0
	field := e.addr + uint64(start) + 8
	body = binary.LittleEndian.AppendUint32(body, uint32(int32(int64(begin)-int64(field))))
	body = binary.LittleEndian.AppendUint32(body, size)
	body = append(body, 0) // augmentation length
	body = append(body, prog...)
	for (len(body)+4)%8 != 0 {
		body = append(body, 0)
	}
	e.entry(body)
}

func (e *ehBuilder) bytes() []byte { return append(append([]byte(nil), e.b...), 0, 0, 0, 0) }

func TestBuildHandAssembled(t *testing.T) {
	e := newEHBuilder(0x2000)
	// A function with a frame pointer prologue and an epilogue inside
	// remember/restore_state.
	e.fde(0x1000, 0x20,
		0x41, 0x0e, 16, 0x86, 2, // +1: cfa rsp+16, rbp at cfa-16
		0x43, 0x0d, 6, // +4: cfa rbp+16
		0x0a, 0x44, 0x0c, 7, 8, // remember; +8: cfa rsp+8
		0x41, 0x0b) // +9: restore: cfa rbp+16 again
	// A PLT (lit11) and _start (ra undefined), after a gap.
	e.fde(0x1040, 0x10, 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22)
	e.fde(0x1050, 0x10, 0x07, 16)
	tab, err := Build([]CFI{{Kind: EHFrame, Data: e.bytes(), Addr: e.addr}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{PC: 0x1000, Kind: KindRSP, CFAOff: 8},
		{PC: 0x1001, Kind: KindRSP, CFAOff: 16, RBPOff: -16},
		{PC: 0x1004, Kind: KindRBP, CFAOff: 16, RBPOff: -16},
		{PC: 0x1008, Kind: KindRSP, CFAOff: 8, RBPOff: -16},
		{PC: 0x1009, Kind: KindRBP, CFAOff: 16, RBPOff: -16},
		{PC: 0x1020, Kind: KindNone},
		{PC: 0x1040, Kind: KindPLT, CFAOff: 8, PLTThreshold: 11},
		{PC: 0x1050, Kind: KindOutermost},
		{PC: 0x1060, Kind: KindNone},
	}
	if !reflect.DeepEqual(tab.Rows(), want) {
		t.Fatalf("rows:\n got %+v\nwant %+v", tab.Rows(), want)
	}
	for _, c := range []struct {
		pc   uint64
		ok   bool
		kind Kind
	}{{0xfff, false, 0}, {0x1000, true, KindRSP}, {0x1007, true, KindRBP}, {0x101f, true, KindRBP}, {0x1020, false, 0}, {0x1045, true, KindPLT}, {0x105f, true, KindOutermost}, {0x1060, false, 0}} {
		if r, ok := tab.Lookup(c.pc); ok != c.ok || r.Kind != c.kind {
			t.Errorf("Lookup(0x%x) = %+v %v, want %v %v", c.pc, r, ok, c.kind, c.ok)
		}
	}
	// The cap: nine rows do not fit in 8 rows' bytes.
	if _, err := Build([]CFI{{Kind: EHFrame, Data: e.bytes(), Addr: e.addr}}, 8*rowBytes); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("capped build: %v, want ErrTooLarge", err)
	}
}

// TestUnwindPLTAndFramePointer walks a synthetic stack: a PLT stub whose
// CFA depends on the pc, then code without a table (frame pointer step).
func TestUnwindPLTAndFramePointer(t *testing.T) {
	e := newEHBuilder(0x2000)
	e.fde(0x1040, 0x10, 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22)
	tab, err := Build([]CFI{{Kind: EHFrame, Data: e.bytes(), Addr: e.addr}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rules := func(pc uint64, leaf bool) (Row, bool) {
		if !leaf {
			pc--
		}
		return tab.Lookup(pc)
	}
	const sp = 0x7000
	stack := make([]byte, 64)
	put := func(addr, v uint64) { binary.LittleEndian.PutUint64(stack[addr-sp:], v) }
	// pc 0x104b: second half of the entry, one word pushed: ra at sp+8.
	put(sp+8, 0x5005) // return into code with no table
	// That frame's rbp chain: [bp] = 0 (outermost), [bp+8] = next ra.
	bp := uint64(sp + 32)
	put(bp, 0)
	put(bp+8, 0x6006)
	res := Unwind(Regs{PC: 0x104b, SP: sp, BP: bp}, Stack{Addr: sp, Data: stack}, rules, 16, nil)
	if !reflect.DeepEqual(res.PCs, []uint64{0x104b, 0x5005, 0x6006}) || res.FPSteps != 2 || res.End != EndFramePointer {
		t.Fatalf("got %x, %d FP steps, end %v", res.PCs, res.FPSteps, res.End)
	}
	// In the first half of the entry nothing was pushed yet: ra at sp+0.
	put(sp, 0x5005)
	res = Unwind(Regs{PC: 0x1045, SP: sp, BP: 0}, Stack{Addr: sp, Data: stack}, rules, 16, nil)
	if len(res.PCs) != 2 || res.PCs[1] != 0x5005 {
		t.Fatalf("first half: got %x", res.PCs)
	}
}

func TestParseEHFrameHdr(t *testing.T) {
	// version 1, eh_frame_ptr pcrel|sdata4, count udata4, table datarel|sdata4.
	hdr := []byte{1, 0x1b, 0x03, 0x3b}
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(0x100-4)) // .eh_frame at hdr+0x100
	hdr = binary.LittleEndian.AppendUint32(hdr, 2)
	for _, v := range []int32{-0x50, 0x120, -0x10, 0x140} {
		hdr = binary.LittleEndian.AppendUint32(hdr, uint32(v))
	}
	h, err := ParseEHFrameHdr(hdr, 0x3000)
	if err != nil {
		t.Fatal(err)
	}
	want := &EHFrameHdr{EHFrame: 0x3100, Table: []HdrEntry{{0x3000 - 0x50, 0x3120}, {0x3000 - 0x10, 0x3140}}}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got %+v, want %+v", h, want)
	}
	// A count the bytes cannot hold is an error, not an allocation.
	bad := append([]byte(nil), hdr...)
	binary.LittleEndian.PutUint32(bad[8:], 0xffffffff)
	if _, err := ParseEHFrameHdr(bad, 0x3000); !errors.Is(err, ErrBadCFI) {
		t.Fatalf("huge count: %v", err)
	}
}

func TestBadCFI(t *testing.T) {
	e := newEHBuilder(0)
	e.fde(0x1000, 0x10, 0x0b) // restore_state with nothing remembered
	good := e.bytes()
	tab, err := Build([]CFI{{Kind: EHFrame, Data: good}}, 0)
	if err != nil || tab.Skipped != 1 || tab.Len() != 0 {
		t.Fatalf("bad program: %v, skipped %d, %d rows", err, tab.Skipped, tab.Len())
	}
	// A length past the end ends the walk with an error.
	trunc := append([]byte(nil), good[:len(good)-8]...)
	binary.LittleEndian.PutUint32(trunc[len(trunc)-16:], 1000)
	if _, err := Build([]CFI{{Kind: EHFrame, Data: trunc}}, 0); !errors.Is(err, ErrBadCFI) {
		t.Fatalf("truncated section: %v", err)
	}
}
