package train

import "math"

// sumTree is the prioritized-replay index: leaves hold priorities, each
// inner node the sum of its children, so sampling proportionally to
// priority and updating one priority are both O(log n).
type sumTree struct {
	cap   int       // number of leaves, a power of two
	nodes []float64 // 1-based heap layout: node k has children 2k, 2k+1; leaves at cap..2cap-1
	maxP  float64
}

func newSumTree(capacity int) *sumTree {
	c := 1
	for c < capacity {
		c <<= 1
	}
	return &sumTree{cap: c, nodes: make([]float64, 2*c), maxP: 1}
}

// set puts priority p (≥ 0) at leaf i.
func (t *sumTree) set(i int, p float64) {
	if math.IsNaN(p) || p < 0 {
		p = 0
	}
	if p > t.maxP {
		t.maxP = p
	}
	k := i + t.cap
	t.nodes[k] = p
	for k >>= 1; k >= 1; k >>= 1 {
		t.nodes[k] = t.nodes[2*k] + t.nodes[2*k+1]
	}
}

func (t *sumTree) get(i int) float64 { return t.nodes[i+t.cap] }
func (t *sumTree) total() float64    { return t.nodes[1] }

// find returns the leaf whose cumulative-priority interval holds u, for u in
// [0, total).
func (t *sumTree) find(u float64) int {
	k := 1
	for k < t.cap {
		l := 2 * k
		if u < t.nodes[l] || t.nodes[l+1] == 0 {
			k = l
		} else {
			u -= t.nodes[l]
			k = l + 1
		}
	}
	return k - t.cap
}
