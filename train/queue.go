package train

import (
	"container/heap"
	"math"

	"github.com/triage-agent/triage/policy"
)

// KeyOrdered marks a whole-queue discipline (FIFO, EDF, SJF): the executor
// serves it strictly by (level, key), exactly as the textbook discipline,
// with no late-task handling.
type KeyOrdered interface{ KeyOrdered() }

// queue is the node's wait queue: the executor contract lives here.
type queue interface {
	push(i int)
	// pop returns the next task to start, or -1 when none may start now;
	// g is what may start (startGate), which holds background work back
	// at the reserve. Key-ordered queues ignore it.
	pop(now float64, g gate) int
	Len() int
	each(func(i int)) // every queued task, any order
}

// newQueue is the queue for p on a node of workers workers: key order for
// the whole-queue disciplines, the full contract for everything else, and
// for the agent's answers under AdaptiveOrder its adaptive order (with the
// node's slowdown and each class's pace against it).
func newQueue(p Policy, out *[]Outcome, workers int, slowdowns *policy.Slowdowns) queue {
	if a, ok := p.(answerOrdered); ok {
		return newAnswerQueue(out, a.answerOrder(), workers, slowdowns)
	}
	_, keyOrdered := p.(KeyOrdered)
	return newQueueOrdered(keyOrdered, out)
}

// newAnswerQueue is the queue for the agent's answers under order: the
// adaptive one for AdaptiveOrder, else the contract by each answer's key.
func newAnswerQueue(out *[]Outcome, order AnswerOrder, workers int, slowdowns *policy.Slowdowns) queue {
	if order == AdaptiveOrder {
		return newAdaptiveQueue(out, workers, slowdowns)
	}
	return newQueueOrdered(false, out)
}

// answerOrdered is a policy whose answers an executor orders by an
// AnswerOrder: the agent's, as the simulator serves it.
type answerOrdered interface{ answerOrder() AnswerOrder }

func newQueueOrdered(keyOrdered bool, out *[]Outcome) queue {
	if keyOrdered {
		return &keyQueue{h: outcomeHeap(out, byLevelKey)}
	}
	q := &priorityQueue{}
	for l := range q.feasible {
		q.feasible[l] = outcomeHeap(out, byKey)
	}
	q.late.init(out)
	q.out = out
	return q
}

// keyQueue serves by (level desc, key asc, arrival).
type keyQueue struct{ h indexHeap }

func (q *keyQueue) push(i int)            { heap.Push(&q.h, i) }
func (q *keyQueue) pop(float64, gate) int { return heap.Pop(&q.h).(int) }
func (q *keyQueue) Len() int              { return q.h.Len() }
func (q *keyQueue) each(f func(i int))    { eachIdx(q.h.idx, f) }
func eachIdx(idx []int, f func(i int)) {
	for _, i := range idx {
		f(i)
	}
}

// priorityQueue is the executor contract for priority policies (the DQN,
// static-class, reserve-rule, and the agent's executors):
//
//   - the highest level first; within a level by key, smallest first (the
//     rules give their deadline; the agent's answers their AnswerOrder's);
//   - a task that can no longer meet its deadline (now + expected cost >
//     deadline) yields to every task, at any level, that still can: late
//     work still runs, shortest expected first, but never ahead of work
//     that can be saved, and once its deadline has passed only in a lull
//     (lateWork). Without this rule EDF collapses under overload: the
//     tasks with the earliest deadlines are exactly the ones already
//     lost;
//   - level 0 is the background tier: its tasks start only while more than
//     BackgroundReserve workers are free (see LowestLevel), and while a
//     contended reserve holds more, only the short ones the next in order
//     (see startGate).
type priorityQueue struct {
	feasible [policy.NumActions]indexHeap
	late     lateWork
	out      *[]Outcome
	n        int
}

func (q *priorityQueue) push(i int) {
	heap.Push(&q.feasible[(*q.out)[i].Level], i)
	q.n++
}

func (q *priorityQueue) pop(now float64, g gate) int {
	for l := policy.NumActions - 1; l >= g.lowest; l-- {
		f := &q.feasible[l]
		for f.Len() > 0 {
			o := &(*q.out)[f.idx[0]]
			if now+o.ExpectedMs <= o.DeadlineMs() {
				if !g.admits(o) {
					break
				}
				q.n--
				return heap.Pop(f).(int)
			}
			q.late.add(l, heap.Pop(f).(int))
		}
	}
	if i := q.late.pop(g, now, *q.out); i >= 0 {
		q.n--
		return i
	}
	return -1
}

func (q *priorityQueue) Len() int { return q.n }
func (q *priorityQueue) each(f func(i int)) {
	for l := range q.feasible {
		eachIdx(q.feasible[l].idx, f)
	}
	q.late.each(f)
}

// BackgroundReserve is how many of a node's workers level 0 (background)
// leaves free for levels 1–4 on a calm node: one in four
// (policy.CalmReserve), so none on nodes with fewer than four workers,
// where holding one back from all background work would idle too much of
// the node (the long work leaves one while a short limit is given:
// policy.Hold.Held). A policy that
// reads the kernel may ask for more while the node is contended
// (Reserver, policy.Reserve).
//
// Why the tier exists: service is non-preemptive, so a 200 ms task that
// takes the last free worker makes every 20 ms task that arrives behind it
// wait for it, whatever its priority. Ordering alone cannot prevent that;
// only holding a worker back can. With it, the shared overload scenario
// goes from 0.79 to 0.96 SLA attainment for a class-based rule (see
// docs/training.md), and deciding which tasks are background is part of
// what the policy learns.
func BackgroundReserve(workers int) int {
	return policy.ReserveWorkers(policy.CalmReserve, workers)
}

// LowestLevel is the lowest level a free worker may start when busy of
// the node's workers are serving and reserve of them are held back from
// background work: 0 while more than the reserve is free, else 1.
func LowestLevel(busy, workers, reserve int) int {
	if workers-busy > reserve {
		return 0
	}
	return 1
}

// gate is what a free worker may start: every level from lowest up, at
// level 0 only a task expected to cost at most backgroundMs, or one whose
// SLA is urgent under hold (policy.Hold.Urgent), and late level-0 work,
// or work of any level whose deadline has passed, only if lateStarts
// (policy.Hold.LateStarts).
type gate struct {
	lowest       int
	backgroundMs float64
	hold         policy.Hold
	lateStarts   bool
}

// startGate is what a free worker may start when busy of the node's
// workers are serving under hold: any level while more workers are free
// than long background work leaves (policy.Hold.Held: the reserve, at
// least one of two or more workers while a short limit is given); while
// no more than that is free but more than short background work leaves
// (the calm quarter; none on a node of policy.ShortUnheldWorkers or
// more), the foreground and, of the background, only the
// task next in order and only if its expected cost is at most
// hold.ShortMs (policy.ShortBackgroundMs) or its SLA is urgent
// (policy.UrgentBackgroundSLAMs); else the foreground and, next in order,
// urgent background work alone. Only work that can still meet its SLA
// passes as short or urgent: late background work waits for the reserve,
// and while a short limit is given for a nearly idle node
// (policy.Hold.LateStarts).
func startGate(busy, workers int, h policy.Hold) gate {
	long, short := h.Held(workers)
	if LowestLevel(busy, workers, long) == 0 {
		return gate{lowest: 0, backgroundMs: math.Inf(1), hold: h, lateStarts: h.LateStarts(busy, workers)}
	}
	if h.ShortMs > 0 && LowestLevel(busy, workers, short) == 0 {
		return gate{lowest: 0, backgroundMs: h.ShortMs, hold: h}
	}
	if h.UrgentSLAMs > 0 {
		return gate{lowest: 0, backgroundMs: math.Inf(-1), hold: h}
	}
	return gate{lowest: 1}
}

// passedAsShort is whether a task at level, started with busy of workers
// serving under hold, started only because it was short or urgent: a
// background task through a gate that lets such background work alone.
func passedAsShort(level, busy, workers int, hold policy.Hold) bool {
	return level == 0 && startGate(busy, workers, hold).shortOnly()
}

// MarkStart marks o, started with busy of workers serving under hold, as
// the executors count their starts: HeldBack while the reserve held more
// than the calm quarter, ShortStart when it passed as short or urgent
// work.
func (o *Outcome) MarkStart(busy, workers int, hold policy.Hold) {
	o.HeldBack = hold.Share > policy.CalmReserve
	o.ShortStart = passedAsShort(o.Level, busy, workers, hold)
}

// ShortStarts is how many of out started as short or urgent work (Outcome.ShortStart):
// what both executors, the simulator's and bench e2e's, report.
func ShortStarts(out []Outcome) int {
	n := 0
	for i := range out {
		if out[i].ShortStart {
			n++
		}
	}
	return n
}

// admits is whether g lets o start, o being the next in order at its
// level.
func (g gate) admits(o *Outcome) bool {
	return o.Level > 0 || o.ExpectedMs <= g.backgroundMs || g.hold.Urgent(o.SLAMs)
}

// shortOnly is whether g lets only short or urgent background work start.
func (g gate) shortOnly() bool { return g.lowest == 0 && !math.IsInf(g.backgroundMs, 1) }

// Queue is the executor contract for executors outside the simulator (the
// e2e bench's real workers). It orders indices into *out by each
// Outcome's Level and Key, which must be set before Push; keyOrdered gives
// the whole-queue disciplines' plain (level, key) order instead.
type Queue struct{ q queue }

// NewQueue returns an empty queue over *out.
func NewQueue(out *[]Outcome, keyOrdered bool) *Queue {
	return &Queue{q: newQueueOrdered(keyOrdered, out)}
}

// NewAnswerQueue returns an empty queue over *out for the agent's answers,
// ordered within a level by order on a node of workers workers; slowdowns
// (AdaptiveOrder only; nil: unknown) is how much slower than described the
// executor's recent tasks ran, overall and each class's pace against that
// (policy.Slowdowns), read at each Pop.
func NewAnswerQueue(out *[]Outcome, order AnswerOrder, workers int, slowdowns *policy.Slowdowns) *Queue {
	return &Queue{q: newAnswerQueue(out, order, workers, slowdowns)}
}

// Push queues (*out)[i].
func (q *Queue) Push(i int) { q.q.push(i) }

// Pop returns the task a free worker starts at nowMs with busy of
// workers serving, or -1 when none may start (empty, or only background
// work while the reserve is reached). hold is what background work leaves
// free (as the agent sends it; policy.Hold{Share: policy.CalmReserve} for
// an executor that is told none): see startGate.
func (q *Queue) Pop(nowMs float64, busy, workers int, hold policy.Hold) int {
	if q.q.Len() == 0 {
		return -1
	}
	return q.q.pop(nowMs, startGate(busy, workers, hold))
}

// Len is the number of queued tasks.
func (q *Queue) Len() int { return q.q.Len() }

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

// indexHeap is a container/heap of task indices in the order less gives:
// the queues' heaps and the simulator's phases (phaseHeap).
type indexHeap struct {
	idx  []int
	less func(x, y int) bool
}

// outcomeHeap orders indices into *out by less of their outcomes.
func outcomeHeap(out *[]Outcome, less lessFunc) indexHeap {
	return indexHeap{less: func(x, y int) bool { return less(&(*out)[x], &(*out)[y]) }}
}

func (h indexHeap) Len() int           { return len(h.idx) }
func (h indexHeap) Less(a, b int) bool { return h.less(h.idx[a], h.idx[b]) }
func (h indexHeap) Swap(a, b int)      { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *indexHeap) Push(x any)        { h.idx = append(h.idx, x.(int)) }
func (h *indexHeap) Pop() any {
	n := len(h.idx) - 1
	v := h.idx[n]
	h.idx = h.idx[:n]
	return v
}

// ExpiredStarts is how many of out started after their deadline had
// passed: work that could meet no SLA when it took its worker. bench e2e
// reports it for the real run and, at --scale 1, for its simulated twins,
// so the simulator's count can be set against a real node's.
func ExpiredStarts(out []Outcome) int {
	n := 0
	for i := range out {
		if out[i].Started && out[i].StartMs > out[i].DeadlineMs() {
			n++
		}
	}
	return n
}
