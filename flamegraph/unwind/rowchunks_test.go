package unwind

import "testing"

// The chunked row store keeps rows in order across chunk boundaries,
// truncates into an earlier chunk (a failed FDE's rows are dropped) and
// compacts to exactly its rows, each with its own rule.
func TestRowChunksAcrossChunkBoundaries(t *testing.T) {
	var c rowChunks
	if c.last() != nil || c.len() != 0 {
		t.Fatal("an empty store has a last row")
	}
	want := []uint32{}
	add := func(n int) {
		for range n {
			pc := uint32(len(want))
			c.add(packedRow{pc: pc, rule: rule{cfaOff: int32(pc % 7)}})
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
		pcs, rules, dict, ok := c.compact()
		if !ok || len(pcs) != len(want) || cap(pcs) != len(want) || len(rules) != len(want) || cap(rules) != len(want) {
			t.Fatalf("%s: compacted %d rows (capacity %d, %d rules, ok %v), want %d", what, len(pcs), cap(pcs), len(rules), ok, len(want))
		}
		for i, pc := range pcs {
			if pc != want[i] || dict[rules[i]].cfaOff != int32(want[i]%7) {
				t.Fatalf("%s: row %d has pc %d and rule %+v, want pc %d and CFA offset %d", what, i, pc, dict[rules[i]], want[i], want[i]%7)
			}
		}
		if len(want) > 7 && len(dict) != 7 {
			t.Fatalf("%s: %d distinct rules in the dictionary, want 7", what, len(dict))
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
	c.last().pc = 98 // the last row is written in place (a row at the same PC)
	c.last().cfaOff = 0
	want[len(want)-1] = 98
	check("last row rewritten")
	add(chunkRows)
	check("refilled past the boundary")
	c.truncate(0)
	want = want[:0]
	check("emptied")
}

// A table indexes at most maxRules distinct rules; one more is refused
// (the binary then unwinds by frame pointer), never wrapped around.
func TestRowChunksRefuseMoreRulesThanTheDictionaryIndexes(t *testing.T) {
	var c rowChunks
	for i := range maxRules {
		c.add(packedRow{pc: uint32(i), rule: rule{cfaOff: int32(i)}})
	}
	if _, _, dict, ok := c.compact(); !ok || len(dict) != maxRules {
		t.Fatalf("%d distinct rules: ok %v, dictionary of %d", maxRules, ok, len(dict))
	}
	c.add(packedRow{pc: maxRules, rule: rule{cfaOff: maxRules}})
	if _, _, _, ok := c.compact(); ok {
		t.Fatalf("%d distinct rules compacted, want refused", maxRules+1)
	}
}
