package unwind

import (
	"errors"
	"fmt"
	"math"
)

// DWARF register numbers of the System V x86-64 ABI that the unwinder
// tracks: the CFA is defined from rsp or rbp, rbp is restored for the frame
// pointer fallback, and column 16 is the return address.
const (
	regRBP = 6
	regRSP = 7
	regRA  = 16
)

// Kind says how a row computes the canonical frame address (CFA, the caller's
// stack pointer), or why it cannot.
type Kind uint8

const (
	// KindNone: no FDE covers this address (a gap between functions, or
	// past the last one).
	KindNone Kind = iota
	// KindRSP: CFA = rsp + CFAOff.
	KindRSP
	// KindRBP: CFA = rbp + CFAOff.
	KindRBP
	// KindPLT: the procedure linkage table's expression, CFA = rsp + 8, plus
	// 8 more once (pc & 15) >= PLTThreshold (the second half of each PLT
	// entry has pushed a word).
	KindPLT
	// KindOutermost: the return address is undefined here (_start, a
	// thread's start routine): the stack ends cleanly.
	KindOutermost
	// KindUnsupported: a rule the unwinder does not evaluate (a CFA from
	// another register or a general DWARF expression, a return address not
	// at CFA-8); the unwinder steps by frame pointer instead.
	KindUnsupported
)

var kindNames = [...]string{"none", "rsp", "rbp", "plt", "outermost", "unsupported"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// RBPUnknown in Row.RBPOff means the caller's rbp cannot be recovered (its
// rule is an expression, or it was not saved on the stack).
const RBPUnknown = math.MinInt16

// Row is the unwind rule from PC up to the next row's PC: 16 bytes, so that
// a table of a large binary stays small (the rows of libc are ~200 KiB).
type Row struct {
	PC     uint64
	CFAOff int32
	// RBPOff is where the caller's rbp was saved, relative to the CFA; 0
	// means rbp still holds the caller's value; RBPUnknown that it is lost.
	RBPOff       int16
	Kind         Kind
	PLTThreshold uint8
}

// Register rules the unwinder distinguishes.
type ruleKind uint8

const (
	ruleSame ruleKind = iota // unchanged (the default for callee-saved rbp)
	ruleUndefined
	ruleOffset // saved at CFA + off
	ruleOther  // a rule the unwinder does not evaluate
)

type regRule struct {
	kind ruleKind
	off  int64
}

type cfaRule struct {
	reg  uint64
	off  int64
	kind Kind // KindRSP / KindRBP from reg, else KindPLT or KindUnsupported
	plt  uint8
}

type cfaState struct {
	cfa     cfaRule
	rbp, ra regRule
}

// maxRememberDepth bounds DW_CFA_remember_state nesting (compilers use one
// or two levels).
const maxRememberDepth = 64

// errRowLimit stops the interpreter when a table would outgrow its cap.
var errRowLimit = errors.New("unwind table over its size cap")

// interp runs CFA programs and appends rows.
type interp struct {
	c       *cie
	initial cfaState // after the CIE's initial instructions (DW_CFA_restore)
	// rows are packed as they are emitted, relative to base (the first
	// row's PC; rows come in address order).
	rows    rowChunks
	base    uint64
	maxRows int
}

// rowsForFDE appends the rows of one FDE: one per location where its rule
// changes, starting at the FDE's first address.
func (in *interp) rowsForFDE(f fde) error {
	in.c = f.cie
	if f.cie.raReg != regRA {
		return in.emit(f.begin, cfaState{ra: regRule{kind: ruleOther}})
	}
	var st cfaState
	st.cfa.kind = KindUnsupported
	if _, err := in.run(f.cie.initial, &st, f.begin, f.end, false); err != nil {
		return err
	}
	in.initial = st
	loc, err := in.run(f.program, &st, f.begin, f.end, true)
	if err != nil {
		return err
	}
	if loc < f.end {
		return in.emit(loc, st)
	}
	return nil
}

func (in *interp) emit(loc uint64, st cfaState) error { return in.emitRow(st.row(loc)) }

func (st *cfaState) row(pc uint64) Row {
	r := Row{PC: pc, Kind: st.cfa.kind}
	switch {
	case st.ra.kind == ruleUndefined:
		return Row{PC: pc, Kind: KindOutermost}
	case st.ra.kind != ruleOffset || st.ra.off != -8:
		return Row{PC: pc, Kind: KindUnsupported}
	}
	if r.Kind == KindRSP || r.Kind == KindRBP || r.Kind == KindPLT {
		if st.cfa.off < math.MinInt32 || st.cfa.off > math.MaxInt32 {
			return Row{PC: pc, Kind: KindUnsupported}
		}
		r.CFAOff = int32(st.cfa.off)
		r.PLTThreshold = st.cfa.plt
	}
	switch st.rbp.kind {
	case ruleOffset:
		if st.rbp.off == 0 || st.rbp.off <= RBPUnknown || st.rbp.off > math.MaxInt16 {
			r.RBPOff = RBPUnknown
		} else {
			r.RBPOff = int16(st.rbp.off)
		}
	case ruleSame:
	default:
		r.RBPOff = RBPUnknown
	}
	return r
}

// run interprets a CFA program from location loc. With emit set, each
// advance past a location emits the row in force there; it returns the
// final location. Locations never leave [begin, end]: a program that
// advances past its FDE stops there.
func (in *interp) run(prog []byte, st *cfaState, loc, end uint64, emit bool) (uint64, error) {
	r := &reader{b: prog}
	var stack []cfaState
	advance := func(delta uint64) error {
		if in.c.codeAlign != 0 && delta > (end-loc)/in.c.codeAlign {
			loc = end
			return nil
		}
		next := loc + delta*in.c.codeAlign
		if emit && next > loc {
			if err := in.emit(loc, *st); err != nil {
				return err
			}
		}
		loc = next
		return nil
	}
	for r.off < len(r.b) && r.err == nil && loc < end {
		op := r.u8()
		var err error
		switch op >> 6 {
		case 1: // DW_CFA_advance_loc
			err = advance(uint64(op & 0x3f))
		case 2: // DW_CFA_offset
			st.set(uint64(op&0x3f), regRule{ruleOffset, int64(r.uleb()) * in.c.dataAlign})
		case 3: // DW_CFA_restore
			st.restore(uint64(op&0x3f), &in.initial)
		default:
			err = in.extended(op, r, st, &stack, advance, end, &loc)
		}
		if err != nil {
			return loc, err
		}
	}
	if r.err != nil {
		return loc, fmt.Errorf("%w: CFA program: %w", ErrBadCFI, r.err)
	}
	return loc, nil
}

func (in *interp) extended(op byte, r *reader, st *cfaState, stack *[]cfaState, advance func(uint64) error, end uint64, loc *uint64) error {
	c := in.c
	switch op {
	case 0x00: // DW_CFA_nop
	case 0x01: // DW_CFA_set_loc
		var to uint64
		if c.addrSize == 4 {
			to = uint64(r.u32())
		} else {
			to = r.u64()
		}
		if to < *loc {
			return fmt.Errorf("%w: DW_CFA_set_loc goes backwards", ErrBadCFI)
		}
		if c.codeAlign == 0 {
			*loc = min(to, end)
			return nil
		}
		return advance((min(to, end) - *loc) / c.codeAlign)
	case 0x02: // DW_CFA_advance_loc1
		return advance(uint64(r.u8()))
	case 0x03: // DW_CFA_advance_loc2
		return advance(uint64(r.u16()))
	case 0x04: // DW_CFA_advance_loc4
		return advance(uint64(r.u32()))
	case 0x05: // DW_CFA_offset_extended
		reg := r.uleb()
		st.set(reg, regRule{ruleOffset, int64(r.uleb()) * c.dataAlign})
	case 0x06: // DW_CFA_restore_extended
		st.restore(r.uleb(), &in.initial)
	case 0x07: // DW_CFA_undefined
		st.set(r.uleb(), regRule{kind: ruleUndefined})
	case 0x08: // DW_CFA_same_value
		st.set(r.uleb(), regRule{kind: ruleSame})
	case 0x09: // DW_CFA_register
		reg := r.uleb()
		r.uleb()
		st.set(reg, regRule{kind: ruleOther})
	case 0x0a: // DW_CFA_remember_state
		if len(*stack) >= maxRememberDepth {
			return fmt.Errorf("%w: DW_CFA_remember_state nested over %d", ErrBadCFI, maxRememberDepth)
		}
		*stack = append(*stack, *st)
	case 0x0b: // DW_CFA_restore_state
		n := len(*stack)
		if n == 0 {
			return fmt.Errorf("%w: DW_CFA_restore_state without remember", ErrBadCFI)
		}
		// The CFA rule is part of the state too (DWARF 5 says so; GCC
		// relies on it around epilogues).
		*st = (*stack)[n-1]
		*stack = (*stack)[:n-1]
	case 0x0c: // DW_CFA_def_cfa
		reg := r.uleb()
		st.setCFA(reg, int64(r.uleb()))
	case 0x0d: // DW_CFA_def_cfa_register
		st.setCFA(r.uleb(), st.cfa.off)
	case 0x0e: // DW_CFA_def_cfa_offset
		st.setCFA(st.cfa.reg, int64(r.uleb()))
	case 0x0f: // DW_CFA_def_cfa_expression
		expr := r.bytes(r.uleb())
		st.cfa = cfaRule{kind: KindUnsupported}
		if thr, ok := pltExpression(expr); ok {
			st.cfa = cfaRule{reg: regRSP, off: 8, kind: KindPLT, plt: thr}
		}
	case 0x10: // DW_CFA_expression
		reg := r.uleb()
		r.bytes(r.uleb())
		st.set(reg, regRule{kind: ruleOther})
	case 0x11: // DW_CFA_offset_extended_sf
		reg := r.uleb()
		st.set(reg, regRule{ruleOffset, r.sleb() * c.dataAlign})
	case 0x12: // DW_CFA_def_cfa_sf
		reg := r.uleb()
		st.setCFA(reg, r.sleb()*c.dataAlign)
	case 0x13: // DW_CFA_def_cfa_offset_sf
		st.setCFA(st.cfa.reg, r.sleb()*c.dataAlign)
	case 0x14, 0x15: // DW_CFA_val_offset(_sf): the value is CFA+off, not stored
		reg := r.uleb()
		if op == 0x14 {
			r.uleb()
		} else {
			r.sleb()
		}
		st.set(reg, regRule{kind: ruleOther})
	case 0x16: // DW_CFA_val_expression
		reg := r.uleb()
		r.bytes(r.uleb())
		st.set(reg, regRule{kind: ruleOther})
	case 0x1d: // DW_CFA_MIPS_advance_loc8
		return advance(r.u64())
	case 0x2e: // DW_CFA_GNU_args_size
		r.uleb()
	case 0x2f: // DW_CFA_GNU_negative_offset_extended
		reg := r.uleb()
		st.set(reg, regRule{ruleOffset, -int64(r.uleb()) * c.dataAlign})
	default:
		return fmt.Errorf("%w: unknown CFA opcode 0x%x", ErrBadCFI, op)
	}
	return nil
}

func (st *cfaState) set(reg uint64, rule regRule) {
	switch reg {
	case regRBP:
		st.rbp = rule
	case regRA:
		st.ra = rule
	}
}

func (st *cfaState) restore(reg uint64, initial *cfaState) {
	switch reg {
	case regRBP:
		st.rbp = initial.rbp
	case regRA:
		st.ra = initial.ra
	}
}

func (st *cfaState) setCFA(reg uint64, off int64) {
	st.cfa = cfaRule{reg: reg, off: off, kind: KindUnsupported}
	switch reg {
	case regRSP:
		st.cfa.kind = KindRSP
	case regRBP:
		st.cfa.kind = KindRBP
	}
}

// pltExpression recognises the CFA expression GNU ld writes for .plt (and,
// with threshold 10, for the IBT .plt.sec layout):
//
//	DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
//	DW_OP_litN; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
//
// that is, rsp + 8 + ((rip & 15) >= N ? 8 : 0).
func pltExpression(e []byte) (uint8, bool) {
	if len(e) != 11 || e[0] != 0x77 || e[1] != 0x08 || e[2] != 0x80 || e[3] != 0x00 ||
		e[4] != 0x3f || e[5] != 0x1a || e[7] != 0x2a || e[8] != 0x33 || e[9] != 0x24 || e[10] != 0x22 {
		return 0, false
	}
	if e[6] < 0x30 || e[6] > 0x4f { // DW_OP_lit0..lit31
		return 0, false
	}
	return e[6] - 0x30, true
}
