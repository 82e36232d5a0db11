package unwind

import "fmt"

// Pointer encodings of .eh_frame and .eh_frame_hdr (DW_EH_PE_*, from the
// Linux Standard Base): the low nibble is the format, the next three bits
// what the value is relative to, the top bit an indirection.
const (
	peAbsptr  = 0x00
	peULEB128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSLEB128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c

	pePCRel   = 0x10
	peTextRel = 0x20
	peDataRel = 0x30
	peFuncRel = 0x40
	peAligned = 0x50

	peIndirect = 0x80
	peOmit     = 0xff
)

// ptrBase is what relative pointer encodings are relative to: pcrel uses
// the virtual address of the field itself (the section's address plus the
// field's offset in it), datarel the start of .eh_frame_hdr.
type ptrBase struct {
	section uint64 // virtual address of byte 0 of the reader's slice
	data    uint64 // for datarel (the .eh_frame_hdr address)
	text    uint64 // for textrel
}

// pointer reads a value in encoding enc. Indirect pointers (which need the
// target's memory) and function-relative ones (only meaningful inside an
// LSDA) are errors: nothing the unwinder needs uses them.
func (r *reader) pointer(enc byte, base ptrBase) uint64 {
	if enc == peOmit {
		return 0
	}
	if enc&peIndirect != 0 {
		r.fail(fmt.Errorf("indirect pointer encoding 0x%x", enc))
		return 0
	}
	at := base.section + uint64(r.off)
	v := r.pointerValue(enc & 0x0f)
	if r.err != nil {
		return 0
	}
	switch enc & 0x70 {
	case peAbsptr:
	case pePCRel:
		v += at
	case peDataRel:
		v += base.data
	case peTextRel:
		v += base.text
	default:
		r.fail(fmt.Errorf("pointer encoding 0x%x not supported", enc))
		return 0
	}
	return v
}

// pointerValue reads the format part of an encoding (also used for the FDE
// address range, which has the format but is never relative).
func (r *reader) pointerValue(format byte) uint64 {
	switch format {
	case peAbsptr, peUdata8, peSdata8:
		return r.u64()
	case peULEB128:
		return r.uleb()
	case peUdata2:
		return uint64(r.u16())
	case peUdata4:
		return uint64(r.u32())
	case peSLEB128:
		return uint64(r.sleb())
	case peSdata2:
		return uint64(int64(int16(r.u16())))
	case peSdata4:
		return uint64(int64(int32(r.u32())))
	}
	r.fail(fmt.Errorf("pointer format 0x%x not supported", format))
	return 0
}
