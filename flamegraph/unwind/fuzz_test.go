package unwind

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// The parsers read files of other tenants' processes as root: arbitrary
// bytes must give an error or a table, never a panic, a hang or an
// allocation out of proportion to the input. Seeds are in
// testdata/fuzz/<FuzzName>: real sections of a gcc -O2 -g program and of
// libc, and the hand-assembled cases of the unit tests.

func FuzzEHFrame(f *testing.F) {
	f.Add(newEHBuilder(0x2000).bytes(), uint64(0x2000), false)
	f.Fuzz(func(t *testing.T, data []byte, addr uint64, debugFrame bool) {
		kind := EHFrame
		if debugFrame {
			kind = DebugFrame
		}
		tab, err := Build([]CFI{{Kind: kind, Data: data, Addr: addr}}, 1<<20)
		if err != nil {
			return
		}
		if tab.Bytes() > 1<<20+1024 {
			t.Fatalf("table of %d bytes over its 1 MiB cap", tab.Bytes())
		}
		rows := tab.Rows()
		for i := 1; i < len(rows); i++ {
			if rows[i].PC <= rows[i-1].PC {
				t.Fatalf("rows not sorted at %d: %+v then %+v", i, rows[i-1], rows[i])
			}
		}
		// Walk the input itself as a stack with the table it gave.
		rules := func(pc uint64, leaf bool) (Row, bool) { return tab.Lookup(pc) }
		var pc, sp uint64
		if len(data) >= 16 {
			pc, sp = binary.LittleEndian.Uint64(data), binary.LittleEndian.Uint64(data[8:])
		}
		res := Unwind(Regs{PC: pc, SP: sp, BP: sp + 16}, Stack{Addr: sp, Data: data}, rules, 64, nil)
		if len(res.PCs) > 64 {
			t.Fatalf("%d frames past the limit of 64", len(res.PCs))
		}
	})
}

func FuzzEHFrameHdr(f *testing.F) {
	f.Add([]byte{1, 0x1b, 0x03, 0x3b, 0xfc, 0, 0, 0, 1, 0, 0, 0, 0xb0, 0xff, 0xff, 0xff, 0x20, 1, 0, 0}, uint64(0x3000))
	f.Fuzz(func(t *testing.T, data []byte, addr uint64) {
		h, err := ParseEHFrameHdr(data, addr)
		if err != nil {
			return
		}
		if len(h.Table)*2 > len(data) {
			t.Fatalf("%d entries from %d bytes", len(h.Table), len(data))
		}
	})
}

// FuzzLazyRows reads a table in place from arbitrary bytes as .eh_frame,
// with an arbitrary search table over it (pairs of function start and FDE
// offset): every lookup must answer or refuse, never panic, read past the
// section or keep more than its cap.
func FuzzLazyRows(f *testing.F) {
	eh := newEHBuilder(0x2000).bytes()
	index := make([]byte, 0, 64)
	for off := 0; off < len(eh) && len(index) < 64; off += 8 {
		index = binary.LittleEndian.AppendUint32(index, uint32(off))
		index = binary.LittleEndian.AppendUint32(index, uint32(off))
	}
	f.Add(eh, uint64(0x2000), index)
	f.Fuzz(func(t *testing.T, data []byte, addr uint64, index []byte) {
		l := &lazyRows{file: bytes.NewReader(data), ehAddr: addr, ehSize: uint64(len(data)), base: addr,
			rows: map[int32]*fdeRows{}, cies: map[uint64]*cie{}, maxBytes: 64 << 10}
		for i := 0; i+8 <= len(index) && len(l.pcs) < 256; i += 8 {
			pc, off := binary.LittleEndian.Uint32(index[i:]), binary.LittleEndian.Uint32(index[i+4:])
			if n := len(l.pcs); n > 0 && pc < l.pcs[n-1] {
				pc = l.pcs[n-1] // the search table is sorted
			}
			l.pcs, l.fdes = append(l.pcs, pc), append(l.fdes, off)
		}
		for _, pc := range l.pcs {
			for _, d := range []uint64{0, 1, 15} {
				if row, ok := l.lookup(l.base + uint64(pc) + d); ok && row.Kind == KindNone {
					t.Fatalf("a row without a rule answered: %+v", row)
				}
			}
		}
		if b := l.bytes(); b > 64<<10+maxFunctionRows*24+4096 {
			t.Fatalf("table read in place holds %d bytes over its 64 KiB cap", b)
		}
	})
}
