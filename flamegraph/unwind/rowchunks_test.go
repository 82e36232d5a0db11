package unwind

import "testing"

// The chunked row store keeps rows in order across chunk boundaries,
// truncates into an earlier chunk (a failed FDE's rows are dropped) and
// flattens to exactly its rows.
func TestRowChunksAcrossChunkBoundaries(t *testing.T) {
	var c rowChunks
	if c.last() != nil || c.len() != 0 {
		t.Fatal("an empty store has a last row")
	}
	want := []uint32{}
	add := func(n int) {
		for range n {
			pc := uint32(len(want))
			c.add(packedRow{pc: pc})
			want = append(want, pc)
		}
	}
	check := func(what string) {
		t.Helper()
		if c.len() != len(want) {
			t.Fatalf("%s: len %d, want %d", what, c.len(), len(want))
		}
		if l := c.last(); len(want) > 0 && (l == nil || l.pc != want[len(want)-1]) {
			t.Fatalf("%s: last %v, want pc %d", what, l, want[len(want)-1])
		}
		got := c.flatten()
		if len(got) != len(want) || cap(got) != len(want) {
			t.Fatalf("%s: flattened %d rows (capacity %d), want %d", what, len(got), cap(got), len(want))
		}
		for i, r := range got {
			if r.pc != want[i] {
				t.Fatalf("%s: row %d has pc %d, want %d", what, i, r.pc, want[i])
			}
		}
	}
	add(3*chunkRows + 5)
	check("three chunks and five rows")
	c.truncate(2 * chunkRows)
	want = want[:2*chunkRows]
	check("truncated at a chunk's end")
	c.truncate(chunkRows + 3)
	want = want[:chunkRows+3]
	check("truncated inside an earlier chunk")
	c.last().pc = 99 // the last row is written in place (a row at the same PC)
	want[len(want)-1] = 99
	check("last row rewritten")
	add(chunkRows)
	check("refilled past the boundary")
	c.truncate(0)
	want = want[:0]
	check("emptied")
}
