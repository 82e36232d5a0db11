package unwind

import (
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
