package train

import (
	"container/heap"

	"github.com/triage-agent/triage/policy"
)

// lateWork is a queue's late work, per level: the tasks that can no longer
// make their deadline at their expected cost, each served shortest
// expected first once no level a worker may start has a task that still
// can. Of them, those whose deadline has already passed are expired: they
// wait for a lull as late background work does (gate.lateStarts), while
// the rest, which may still finish in time where they cost less than
// expected, go first.
//
// Why: an expired task meets no SLA wherever it runs, and service is
// non-preemptive, so on a worker the reserve holds it is the worker that
// the next task able to meet its deadline wanted. Under a deep overload
// the foreground's expired backlog took every worker its feasible work
// left for a moment, and the tasks behind it missed in turn: the fresh
// set's gen-1800-012 (6 workers, bursts to 3.8 times an overload) started
// hundreds of expired tasks a second and met 0.32 of its SLAs, 0.45 with
// the rule. Chosen on the generated selection sets and checked on the
// check, fresh and large-node sets, every one of which it raised; level
// on real workers, whose executor starts far fewer expired tasks than the
// simulator's (docs/policy-history.md, "Expired work waits for a lull
// (forty-second session)").
type lateWork struct {
	late    [policy.NumActions]indexHeap // by expected cost
	expired [policy.NumActions]indexHeap // by expected cost
}

// init makes both heaps of every level order the outcomes of *out.
func (w *lateWork) init(out *[]Outcome) {
	for l := range w.late {
		w.late[l] = outcomeHeap(out, byExpected)
		w.expired[l] = outcomeHeap(out, byExpected)
	}
}

// add puts task i, at level l, among the late work. Time only moves
// forward, so a late task never becomes feasible again: moving it once is
// enough.
func (w *lateWork) add(l, i int) { heap.Push(&w.late[l], i) }

// pop is the late task to start under g at now, or -1: the highest level's
// shortest late task whose deadline has not passed; else, where g lets
// late work wait no longer (gate.lateStarts), the highest level's shortest
// expired one. Late background work, expired or not, starts only where g
// lets it: it has missed its SLA already at its expected cost.
func (w *lateWork) pop(g gate, now float64, out []Outcome) int {
	for l := policy.NumActions - 1; l >= g.lowest; l-- {
		h := &w.late[l]
		for h.Len() > 0 && now > out[h.idx[0]].DeadlineMs() {
			heap.Push(&w.expired[l], heap.Pop(h).(int))
		}
		if h.Len() > 0 {
			if l == 0 && !g.lateStarts {
				return -1
			}
			return heap.Pop(h).(int)
		}
	}
	if !g.lateStarts {
		return -1
	}
	for l := policy.NumActions - 1; l >= g.lowest; l-- {
		if w.expired[l].Len() > 0 {
			return heap.Pop(&w.expired[l]).(int)
		}
	}
	return -1
}

// each calls f on every late task, any order.
func (w *lateWork) each(f func(i int)) {
	for l := range w.late {
		eachIdx(w.late[l].idx, f)
		eachIdx(w.expired[l].idx, f)
	}
}
