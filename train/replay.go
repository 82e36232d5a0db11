package train

import (
	"math"
	"math/rand/v2"

	"github.com/triage-agent/triage/policy"
)

// Transition is one stored experience.
type Transition struct {
	S    policy.State
	A    uint8
	R    float32
	Next policy.State
	Done bool
	// Teacher is the demonstrator's action + 1 in this state (0: none); it
	// adds the large-margin loss of DQfD (see DQNConfig.DemoMargin).
	Teacher uint8
}

// replay is a prioritized experience replay buffer (Schaul et al. 2016):
// transition i is drawn with probability p_i^α / Σ p^α, where p_i is its
// last TD error plus a floor, and corrected by the importance weight
// (N·P(i))^−β / max_j w_j, with β annealed towards 1 by the trainer.
type replay struct {
	data  []Transition
	tree  *sumTree
	next  int
	n     int
	alpha float64
}

const perEpsilon = 1e-3 // keeps every transition drawable

func newReplay(capacity int, alpha float64) *replay {
	return &replay{data: make([]Transition, capacity), tree: newSumTree(capacity), alpha: alpha}
}

// add stores t with the highest priority seen so far, so a new transition
// is drawn at least once soon.
func (r *replay) add(t Transition) {
	r.data[r.next] = t
	r.tree.set(r.next, r.tree.maxP)
	r.next = (r.next + 1) % len(r.data)
	if r.n < len(r.data) {
		r.n++
	}
}

// sample draws len(idx) transitions by stratified proportional sampling and
// fills their importance weights.
func (r *replay) sample(rng *rand.Rand, beta float64, idx []int, w []float32) {
	total := r.tree.total()
	seg := total / float64(len(idx))
	minP := math.Inf(1)
	for i := range idx {
		u := (float64(i) + rng.Float64()) * seg
		j := r.tree.find(math.Min(u, math.Nextafter(total, 0)))
		if j >= r.n { // only possible through float rounding at the edge
			j = r.n - 1
		}
		idx[i] = j
		minP = math.Min(minP, r.tree.get(j))
	}
	// The largest weight belongs to the smallest priority in the batch;
	// normalising by it keeps every weight ≤ 1.
	maxW := math.Pow(float64(r.n)*minP/total, -beta)
	for i, j := range idx {
		p := r.tree.get(j) / total
		w[i] = float32(math.Pow(float64(r.n)*p, -beta) / maxW)
	}
}

// update sets transition j's priority from its TD error.
func (r *replay) update(j int, tdErr float64) {
	r.tree.set(j, math.Pow(math.Abs(tdErr)+perEpsilon, r.alpha))
}
