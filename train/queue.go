package train

import (
	"container/heap"

	"github.com/triage-agent/triage/policy"
)

// KeyOrdered marks a whole-queue discipline (FIFO, EDF, SJF): the executor
// serves it strictly by (level, key), exactly as the textbook discipline,
// with no late-task handling.
type KeyOrdered interface{ KeyOrdered() }

// queue is the node's wait queue: the executor contract lives here.
type queue interface {
	push(i int)
	pop(now float64) int
	Len() int
	each(func(i int)) // every queued task, any order
}

func newQueue(p Policy, out *[]Outcome) queue {
	if _, ok := p.(KeyOrdered); ok {
		return &keyQueue{h: indexHeap{out: out, less: byLevelKey}}
	}
	q := &priorityQueue{}
	for l := range q.feasible {
		q.feasible[l] = indexHeap{out: out, less: byKey}
		q.late[l] = indexHeap{out: out, less: byExpected}
	}
	q.out = out
	return q
}

// keyQueue serves by (level desc, key asc, arrival).
type keyQueue struct{ h indexHeap }

func (q *keyQueue) push(i int)         { heap.Push(&q.h, i) }
func (q *keyQueue) pop(float64) int    { return heap.Pop(&q.h).(int) }
func (q *keyQueue) Len() int           { return q.h.Len() }
func (q *keyQueue) each(f func(i int)) { eachIdx(q.h.idx, f) }
func eachIdx(idx []int, f func(i int)) {
	for _, i := range idx {
		f(i)
	}
}

// priorityQueue is the executor contract for priority policies (the DQN,
// static-class, slack-rule, and the agent's executors): the highest level
// first; within a level earliest deadline (key) first; and a task that can
// no longer meet its deadline (now + expected cost > deadline) yields to
// every task, at any level, that still can — late work still runs, shortest
// expected first, but never ahead of work that can be saved. Without that
// last rule EDF collapses under overload: the tasks with the earliest
// deadlines are exactly the ones already lost.
type priorityQueue struct {
	feasible [policy.NumActions]indexHeap
	late     [policy.NumActions]indexHeap
	out      *[]Outcome
	n        int
}

func (q *priorityQueue) push(i int) {
	heap.Push(&q.feasible[(*q.out)[i].Level], i)
	q.n++
}

func (q *priorityQueue) pop(now float64) int {
	q.n--
	for l := policy.NumActions - 1; l >= 0; l-- {
		f := &q.feasible[l]
		for f.Len() > 0 {
			o := &(*q.out)[f.idx[0]]
			if now+o.ExpectedMs <= o.DeadlineMs() {
				return heap.Pop(f).(int)
			}
			// Time only moves forward, so a late task never becomes
			// feasible again: moving it once is enough.
			heap.Push(&q.late[l], heap.Pop(f).(int))
		}
	}
	for l := policy.NumActions - 1; l >= 0; l-- {
		if q.late[l].Len() > 0 {
			return heap.Pop(&q.late[l]).(int)
		}
	}
	panic("train: pop from an empty queue") // callers check Len first
}

func (q *priorityQueue) Len() int { return q.n }
func (q *priorityQueue) each(f func(i int)) {
	for l := range q.feasible {
		eachIdx(q.feasible[l].idx, f)
		eachIdx(q.late[l].idx, f)
	}
}

type lessFunc func(x, y *Outcome) bool

func byLevelKey(x, y *Outcome) bool {
	if x.Level != y.Level {
		return x.Level > y.Level
	}
	return byKey(x, y)
}

func byKey(x, y *Outcome) bool {
	if x.Key != y.Key {
		return x.Key < y.Key
	}
	return x.ID < y.ID
}

func byExpected(x, y *Outcome) bool {
	if x.ExpectedMs != y.ExpectedMs {
		return x.ExpectedMs < y.ExpectedMs
	}
	return x.ID < y.ID
}

// indexHeap is a heap of indices into *out.
type indexHeap struct {
	idx  []int
	out  *[]Outcome
	less lessFunc
}

func (h indexHeap) Len() int           { return len(h.idx) }
func (h indexHeap) Less(a, b int) bool { return h.less(&(*h.out)[h.idx[a]], &(*h.out)[h.idx[b]]) }
func (h indexHeap) Swap(a, b int)      { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *indexHeap) Push(x any)        { h.idx = append(h.idx, x.(int)) }
func (h *indexHeap) Pop() any {
	n := len(h.idx) - 1
	v := h.idx[n]
	h.idx = h.idx[:n]
	return v
}
