package unwind

import "encoding/binary"

// Regs are the user registers at the sample: the program counter, the stack
// pointer and the frame pointer.
type Regs struct{ PC, SP, BP uint64 }

// Stack is a copy of the top of a user stack: Data holds the bytes from
// virtual address Addr (the stack pointer at the sample) upward.
type Stack struct {
	Addr uint64
	Data []byte
}

// word reads the 8 bytes at addr, if the copy holds them.
func (s Stack) word(addr uint64) (uint64, bool) {
	if addr < s.Addr || addr-s.Addr > uint64(len(s.Data)) || uint64(len(s.Data))-(addr-s.Addr) < 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(s.Data[addr-s.Addr:]), true
}

// Rules finds the unwind rule for a program counter. leaf is false for
// return addresses: those are looked up at pc-1, inside the call
// instruction, since the instruction after a call may already belong to
// another function (a call to a noreturn function ends its caller). ok is
// false where no table covers pc; the unwinder then steps by frame pointer.
type Rules func(pc uint64, leaf bool) (row Row, ok bool)

// End says why an unwind stopped.
type End uint8

const (
	// EndOutermost: the table marked the outermost frame (or a zero
	// return address): the whole stack was walked.
	EndOutermost End = iota
	// EndTruncated: the next frame lies past the copied bytes of the stack.
	EndTruncated
	// EndFramePointer: a frame-pointer step found no frame (rbp zero or
	// below the stack pointer: code that does not keep frame pointers).
	EndFramePointer
	// EndBadFrame: the computed caller frame is not above the current one
	// (a corrupt or misread stack): stopped rather than loop.
	EndBadFrame
	// EndMaxDepth: the frame limit was reached.
	EndMaxDepth
)

var endNames = [...]string{"complete", "stack copy ended", "frame pointer chain ended", "bad frame", "too deep"}

func (e End) String() string {
	if int(e) < len(endNames) {
		return endNames[e]
	}
	return "unknown"
}

// Result is a walked stack.
type Result struct {
	// PCs leaf first: the sampled pc, then return addresses (as the kernel
	// reports stacks).
	PCs []uint64
	End End
	// FPSteps counts frames stepped by frame pointer because no rule
	// covered their pc (or the rule was not one the unwinder evaluates).
	FPSteps int
	// LastSP is the stack pointer of the last frame reached (the next
	// frame's would have been read from there).
	LastSP uint64
}

// Unwind walks a copied user stack from regs, with table rules where rules
// has them and frame pointers elsewhere, up to maxFrames frames. It reads
// nothing but stack; out's storage is reused.
func Unwind(regs Regs, stack Stack, rules Rules, maxFrames int, out []uint64) Result {
	res := Result{PCs: out[:0]}
	pc, sp, bp := regs.PC, regs.SP, regs.BP
walk:
	for leaf := true; ; leaf = false {
		if pc == 0 {
			res.End = EndOutermost
			break walk
		}
		if len(res.PCs) >= maxFrames {
			res.End = EndMaxDepth
			break walk
		}
		res.PCs = append(res.PCs, pc)
		res.LastSP = sp
		row, ok := rules(pc, leaf)
		if ok && row.Kind == KindOutermost {
			res.End = EndOutermost
			break walk
		}
		var cfa, ra, nbp uint64
		if ok && row.Kind != KindUnsupported {
			switch row.Kind {
			case KindRSP:
				cfa = sp + uint64(int64(row.CFAOff))
			case KindRBP:
				cfa = bp + uint64(int64(row.CFAOff))
			case KindPLT:
				cfa = sp + uint64(int64(row.CFAOff))
				if uint8(pc&15) >= row.PLTThreshold {
					cfa += 8
				}
			}
			var got bool
			if ra, got = stack.word(cfa - 8); !got {
				res.End = EndTruncated
				break walk
			}
			nbp = bp
			switch row.RBPOff {
			case 0:
			case RBPUnknown:
				nbp = 0
			default:
				if nbp, got = stack.word(cfa + uint64(int64(row.RBPOff))); !got {
					res.End = EndTruncated
					break walk
				}
			}
		} else {
			res.FPSteps++
			// The frame-pointer convention: [rbp] is the caller's rbp,
			// [rbp+8] the return address, and the caller's rsp is rbp+16.
			if bp == 0 || bp < sp {
				res.End = EndFramePointer
				break walk
			}
			var got bool
			if nbp, got = stack.word(bp); !got {
				res.End = EndTruncated
				break walk
			}
			if ra, got = stack.word(bp + 8); !got {
				res.End = EndTruncated
				break walk
			}
			cfa = bp + 16
		}
		if cfa <= sp {
			res.End = EndBadFrame
			break walk
		}
		pc, sp, bp = ra, cfa, nbp
	}
	return res
}
