package policy

import (
	"math"
	"slices"
	"sort"
)

// SLAWindow holds the SLAs of the node's most recently decided tasks, for
// feature 20 (FeatTighterShare): the share of them whose SLA is under half
// a task's own. It is what tells a policy that tighter work shares the
// node, so that a task which could wait (a 200 ms SLA beside 20 ms ones)
// should leave the workers to it: without it, the state said nothing of
// the other classes, and the network served a 200 ms class at the top
// priority beside a 20 ms one wherever a queue looked short
// (docs/policy.md, "triage.state.v3"). The agent (every task it decides,
// and every local decision a client reports) and the simulator (every
// arrival) keep one each. The zero value is empty and ready; it is not
// safe for concurrent use.
//
// The window keeps its SLAs sorted beside the ring, so that a share is a
// binary search: the agent asks it for every task it decides and for every
// cell of each decision table it pushes, and a task adds one SLA.
type SLAWindow struct {
	ring   ring[float64]
	sorted []float64 // ring's values in ascending order
}

// SLAWindowSize is how many decided tasks the window holds.
const SLAWindowSize = 128

// TighterRatio is how much tighter another task's SLA must be to count:
// under half of the task's own.
const TighterRatio = 0.5

// Add records one decided task's SLA (ms). A task without a known SLA
// (not finite and positive) is not recorded: it says nothing of how
// urgent the node's work is.
func (w *SLAWindow) Add(slaMs float64) {
	if !knownPositive(slaMs) {
		return
	}
	if old, ok := w.ring.add(slaMs, SLAWindowSize); ok {
		i, _ := slices.BinarySearch(w.sorted, old)
		w.sorted = slices.Delete(w.sorted, i, i+1)
	}
	i, _ := slices.BinarySearch(w.sorted, slaMs)
	w.sorted = slices.Insert(w.sorted, i, slaMs)
}

// TighterShare is the share of the recorded SLAs under TighterRatio times
// slaMs; NaN (unknown: the feature's neutral value) while the window is
// empty or slaMs is not finite and positive.
func (w *SLAWindow) TighterShare(slaMs float64) float64 {
	n := len(w.sorted)
	if n == 0 || !knownPositive(slaMs) {
		return math.NaN()
	}
	under := sort.SearchFloat64s(w.sorted, slaMs*TighterRatio) // the first at or over the bound
	return float64(under) / float64(n)
}

// Len is how many SLAs the window holds.
func (w *SLAWindow) Len() int { return w.ring.len() }
