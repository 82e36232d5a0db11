package unwind

import "slices"

// rowChunks holds a table's rows while it is built, in chunks that are
// never copied until the table takes the rows in one exactly sized slice.
// A slice grown by append copies itself at every step and holds the old
// and the new array at once; Go grows a large slice by a quarter, so
// building ONNX Runtime's 485k rows that way allocated five times their
// size (BenchmarkBuild).
type rowChunks struct {
	full [][]packedRow // each chunkRows long
	cur  []packedRow
}

// chunkRows is the rows in a chunk: 384 KiB.
const chunkRows = 1 << 15

func (c *rowChunks) len() int { return len(c.full)*chunkRows + len(c.cur) }

// last is the latest row, or nil.
func (c *rowChunks) last() *packedRow {
	if n := len(c.cur); n > 0 {
		return &c.cur[n-1]
	}
	if n := len(c.full); n > 0 {
		return &c.full[n-1][chunkRows-1]
	}
	return nil
}

func (c *rowChunks) add(p packedRow) {
	if len(c.cur) == chunkRows {
		c.full = append(c.full, c.cur)
		c.cur = make([]packedRow, 0, chunkRows)
	}
	// The first chunk grows by append, so a small binary's rows take
	// little more than their size.
	c.cur = append(c.cur, p)
}

// truncate keeps the first n rows (n at most len).
func (c *rowChunks) truncate(n int) {
	for len(c.full)*chunkRows > n {
		c.cur = c.full[len(c.full)-1]
		c.full = c.full[:len(c.full)-1]
	}
	c.cur = c.cur[:n-len(c.full)*chunkRows]
}

// compact is every row as a table keeps them, in slices of exactly their
// number: addresses, rule indexes, and the dictionary of distinct rules;
// ok is false when there are more than maxRules of those.
func (c *rowChunks) compact() (pcs []uint32, rules []uint16, dict []rule, ok bool) {
	n := c.len()
	pcs, rules = make([]uint32, 0, n), make([]uint16, 0, n)
	index := map[rule]uint16{}
	add := func(chunk []packedRow) bool {
		for _, p := range chunk {
			i, seen := index[p.rule]
			if !seen {
				if len(dict) == maxRules {
					return false
				}
				i = uint16(len(dict))
				index[p.rule] = i
				dict = append(dict, p.rule)
			}
			pcs, rules = append(pcs, p.pc), append(rules, i)
		}
		return true
	}
	for _, chunk := range c.full {
		if !add(chunk) {
			return nil, nil, nil, false
		}
	}
	if !add(c.cur) {
		return nil, nil, nil, false
	}
	return pcs, rules, slices.Clone(dict), true
}
