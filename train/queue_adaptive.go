package train

import (
	"container/heap"
	"math"

	"github.com/triage-agent/triage/policy"
)

// crowdPerWorker is how many waiting tasks per worker that can still make
// their deadline make a level crowded under AdaptiveOrder, which then
// serves it shortest first. Chosen on generated scenarios and the
// project's files among 1, 2, 4 and 8 (docs/policy.md, "The order within a
// level").
const crowdPerWorker = 4

// adaptiveQueue is the executor contract of priorityQueue (levels, the
// late-work rule, the background tier) under AdaptiveOrder: within a level
// earliest deadline first (the answers' key) while at most crowd of its
// tasks can still make their deadline, shortest expected cost first
// (weighted by the root of the SLA: byCostTimesRootSLA) while more can; a
// task whose expected cost, stretched by the node's slowdown, would end
// past its deadline yields as late work.
//
// Each task that can still make its deadline sits in both of its level's
// heaps; it leaves by one, and the entry left in the other is marked
// (feasible false) and dropped when it surfaces.
type adaptiveQueue struct {
	byKey, byCost, late [policy.NumActions]indexHeap
	waiting             [policy.NumActions]int // tasks in the feasible heaps, per level
	feasible            []bool                 // by task index: in its level's feasible heaps
	crowd               int
	slowdown            func() float64
	out                 *[]Outcome
	n                   int
}

// newAdaptiveQueue is an empty adaptiveQueue over *out for a node of
// workers workers; slowdown is the node's current slowdown (nil: none
// known, the described costs stand).
func newAdaptiveQueue(out *[]Outcome, workers int, slowdown func() float64) *adaptiveQueue {
	q := &adaptiveQueue{out: out, crowd: crowdPerWorker * max(1, workers), slowdown: slowdown}
	for l := range q.byKey {
		q.byKey[l] = outcomeHeap(out, byKey)
		q.byCost[l] = outcomeHeap(out, byCostTimesRootSLA)
		q.late[l] = outcomeHeap(out, byExpected)
	}
	return q
}

// byCostTimesRootSLA is the crowded order: expected cost times the square
// root of the SLA, smallest first, in classes of a factor of two; within a
// class earliest deadline first, then shortest. Across work of different
// scales it is shortest first, which finishes the most tasks under
// overload, and keeps a short task of a loose SLA behind a longer one of a
// tight SLA (30 ms of a 2 s SLA, 1,342, behind 60 ms of a 200 ms one,
// 849), which plain shortest first would not. Among comparable work (one
// class's tasks, whose described costs scatter around their median)
// shortest first lets a fresh task overtake an older one until the older
// can no longer make its deadline; deadline order serves the older while
// it still can. Chosen on generated scenarios and the project's files
// (docs/policy.md, "The order within a level" and "Deadline order among
// comparable work").
func byCostTimesRootSLA(x, y *Outcome) bool {
	a, b := costClass(x), costClass(y)
	if a != b {
		return a < b
	}
	if dx, dy := x.DeadlineMs(), y.DeadlineMs(); dx != dy {
		return dx < dy
	}
	if x.ExpectedMs != y.ExpectedMs {
		return x.ExpectedMs < y.ExpectedMs
	}
	return x.ID < y.ID
}

// costClass is o's class of expected cost times the root of its SLA: the
// floor of its base-2 logarithm (a cost of 0 or less, which a descriptor
// may give, falls in the lowest class).
func costClass(o *Outcome) float64 {
	v := o.ExpectedMs * math.Sqrt(o.SLAMs)
	if !(v > 0) {
		return math.Inf(-1)
	}
	return math.Floor(math.Log2(v))
}

func (q *adaptiveQueue) push(i int) {
	for len(q.feasible) <= i {
		q.feasible = append(q.feasible, false)
	}
	l := (*q.out)[i].Level
	q.feasible[i] = true
	heap.Push(&q.byKey[l], i)
	heap.Push(&q.byCost[l], i)
	q.waiting[l]++
	q.n++
}

// stretch is the factor a task's expected cost is taken at: the node's
// slowdown, never under 1 (a node that runs faster than described does
// not make late work feasible), 1 while it is unknown.
func (q *adaptiveQueue) stretch() float64 {
	if q.slowdown == nil {
		return 1
	}
	s := q.slowdown()
	if math.IsNaN(s) || s < 1 {
		return 1
	}
	return s
}

func (q *adaptiveQueue) pop(now float64, lowest int) int {
	stretch := q.stretch()
	for l := policy.NumActions - 1; l >= lowest; l-- {
		for q.waiting[l] > 0 {
			h := &q.byKey[l]
			if q.waiting[l] > q.crowd {
				h = &q.byCost[l]
			}
			i := heap.Pop(h).(int)
			if !q.feasible[i] {
				continue // it left by the other heap
			}
			q.feasible[i] = false
			q.waiting[l]--
			if q.waiting[l] == 0 {
				// Only marked entries are left: drop them at once.
				q.byKey[l].idx, q.byCost[l].idx = q.byKey[l].idx[:0], q.byCost[l].idx[:0]
			}
			o := &(*q.out)[i]
			if now+stretch*o.ExpectedMs <= o.DeadlineMs() {
				q.n--
				return i
			}
			// Time only moves forward; a slowdown that falls back could
			// make it feasible again, but late work stays late: moved once.
			heap.Push(&q.late[l], i)
		}
	}
	if i := popLate(&q.late, lowest); i >= 0 {
		q.n--
		return i
	}
	return -1
}

func (q *adaptiveQueue) Len() int { return q.n }

func (q *adaptiveQueue) each(f func(i int)) {
	for l := range q.byKey {
		for _, i := range q.byKey[l].idx {
			if q.feasible[i] {
				f(i)
			}
		}
		eachIdx(q.late[l].idx, f)
	}
}
