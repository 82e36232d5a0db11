package policy

import "math"

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
type SLAWindow struct {
	sla  [SLAWindowSize]float64
	n    int
	next int
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
	w.sla[w.next] = slaMs
	w.next = (w.next + 1) % SLAWindowSize
	w.n = min(w.n+1, SLAWindowSize)
}

// TighterShare is the share of the recorded SLAs under TighterRatio times
// slaMs; NaN (unknown: the feature's neutral value) while the window is
// empty or slaMs is not finite and positive.
func (w *SLAWindow) TighterShare(slaMs float64) float64 {
	if w.n == 0 || !knownPositive(slaMs) {
		return math.NaN()
	}
	bound, c := slaMs*TighterRatio, 0
	for _, s := range w.sla[:w.n] {
		if s < bound {
			c++
		}
	}
	return float64(c) / float64(w.n)
}

// Len is how many SLAs the window holds.
func (w *SLAWindow) Len() int { return w.n }
