package e2e

import (
	"container/heap"

	"github.com/triage-agent/triage/policy"
)

// The executor contract of train/sim.go, for real tasks: a free worker
// takes the queued task with the highest level; within a level the one
// with the smallest key (the deadline for priority policies); and a task
// that can no longer meet its deadline (now + expected cost > deadline)
// yields to every task, at any level, that still can. FIFO is one level
// keyed by arrival, without the yield rule (train's KeyOrdered queue).

type queued struct {
	idx        int     // index into the run's tasks
	level      int     // 0..4
	key        float64 // smaller first
	seq        int     // arrival order, for ties
	deadlineMs float64 // wall ms since start
	expectedMs float64 // wall ms of expected work
}

// qheap orders by key (or, for late tasks, by expected cost), then arrival.
type qheap struct {
	x          []*queued
	byExpected bool
}

func (h *qheap) Len() int { return len(h.x) }
func (h *qheap) Less(a, b int) bool {
	x, y := h.x[a], h.x[b]
	kx, ky := x.key, y.key
	if h.byExpected {
		kx, ky = x.expectedMs, y.expectedMs
	}
	if kx != ky {
		return kx < ky
	}
	return x.seq < y.seq
}
func (h *qheap) Swap(a, b int) { h.x[a], h.x[b] = h.x[b], h.x[a] }
func (h *qheap) Push(v any)    { h.x = append(h.x, v.(*queued)) }
func (h *qheap) Pop() any {
	v := h.x[len(h.x)-1]
	h.x = h.x[:len(h.x)-1]
	return v
}

type taskQueue interface {
	push(q *queued)
	pop(nowMs float64) *queued
	len() int
}

// fifoQueue serves in key (arrival) order.
type fifoQueue struct{ h qheap }

func (q *fifoQueue) push(x *queued)      { heap.Push(&q.h, x) }
func (q *fifoQueue) pop(float64) *queued { return heap.Pop(&q.h).(*queued) }
func (q *fifoQueue) len() int            { return q.h.Len() }

// priorityQueue is levels with earliest deadline first and the yield rule.
type priorityQueue struct {
	feasible [policy.NumActions]qheap
	late     [policy.NumActions]qheap
	n        int
}

func newPriorityQueue() *priorityQueue {
	q := &priorityQueue{}
	for l := range q.late {
		q.late[l].byExpected = true
	}
	return q
}

func (q *priorityQueue) push(x *queued) {
	heap.Push(&q.feasible[x.level], x)
	q.n++
}

func (q *priorityQueue) pop(nowMs float64) *queued {
	q.n--
	for l := policy.NumActions - 1; l >= 0; l-- {
		f := &q.feasible[l]
		for f.Len() > 0 {
			x := f.x[0]
			if nowMs+x.expectedMs <= x.deadlineMs {
				return heap.Pop(f).(*queued)
			}
			// Time only moves forward: a late task never becomes feasible again.
			heap.Push(&q.late[l], heap.Pop(f))
		}
	}
	for l := policy.NumActions - 1; l >= 0; l-- {
		if q.late[l].Len() > 0 {
			return heap.Pop(&q.late[l]).(*queued)
		}
	}
	q.n++
	return nil
}

func (q *priorityQueue) len() int { return q.n }
