package train

import (
	"cmp"
	"slices"

	"github.com/triage-agent/triage/policy"
)

// crowdPerWorker is how many waiting tasks per worker that can still make
// their deadline make a level crowded under AdaptiveOrder, whose plan then
// counts the level's queue as draining crowdedPlanStretch times slower
// than its workers alone would drain it. Chosen on generated scenarios and
// the project's files among 1, 2, 4 and 8 (docs/policy-history.md, "The
// order within a level"); asked again for the plan among 2, 4 and 8, it
// kept the bound ("A plan that sets the longest aside").
const crowdPerWorker = 4

// planLimit bounds the tasks a plan takes, the earliest deadlines of the
// level, so a pop's plan costs at most about planLimit × log planLimit
// steps whatever the backlog (BenchmarkAdaptiveQueuePop: 5–6 µs at 512
// waiting, 11–12 µs at 4,096 on the development machine; about 1.2 times
// that since each class has its own stretch, side by side). A task past it
// has a later deadline than every task planned and could only be served
// after one of them, so the bound changes what the plan sets aside, not
// whom it may serve: on the selection sets it moved 6 of 192 scenarios, by
// at most 0.26 points (docs/policy-history.md, "A plan that sets the
// longest aside").
const planLimit = 256

// adaptiveQueue is the executor contract of priorityQueue (levels, the
// late-work rule, the background tier) under AdaptiveOrder: each level is
// served by its plan (levelPlan): earliest deadline first over the tasks
// the plan keeps, the longest set aside while the rest would miss their
// deadlines, so earliest deadline first while every deadline can be met;
// a task whose expected cost, stretched by the slowdown (policy.TaskStretch:
// the node's times its class's pace against it), would end past its deadline
// yields as late work.
type adaptiveQueue struct {
	waiting [policy.NumActions][]int // tasks that can still make their deadline, per level
	late    lateWork
	plan    levelPlan
	workers int
	crowd   int
	stretch stretches
	out     *[]Outcome
	n       int
}

// newAdaptiveQueue is an empty adaptiveQueue over *out for a node of
// workers workers; slowdowns is how the executor's recent work ran, read
// at each pop (nil: none known, the described costs stand).
func newAdaptiveQueue(out *[]Outcome, workers int, slowdowns *policy.Slowdowns) *adaptiveQueue {
	workers = max(1, workers)
	q := &adaptiveQueue{out: out, workers: workers, crowd: crowdPerWorker * workers, stretch: stretches{from: slowdowns}}
	q.late.init(out)
	return q
}

// push puts task i in its level's waiting list, which is kept in deadline
// order (ties by ID), the order the level's plan takes it in.
func (q *adaptiveQueue) push(i int) {
	out := *q.out
	l := out[i].Level
	k, _ := slices.BinarySearchFunc(q.waiting[l], i, func(a, b int) int {
		return byDeadlineThenID(&out[a], &out[b])
	})
	q.waiting[l] = slices.Insert(q.waiting[l], k, i)
	q.n++
}

// byDeadlineThenID compares two outcomes by deadline, then by ID.
func byDeadlineThenID(x, y *Outcome) int {
	if c := cmp.Compare(x.DeadlineMs(), y.DeadlineMs()); c != 0 {
		return c
	}
	return cmp.Compare(x.ID, y.ID)
}

func (q *adaptiveQueue) pop(now float64, g gate) int {
	q.stretch.reset()
	for l := policy.NumActions - 1; l >= g.lowest; l-- {
		q.moveLate(l, now)
		if len(q.waiting[l]) == 0 {
			continue
		}
		drain := 1.0
		if len(q.waiting[l]) > q.crowd {
			drain = crowdedPlanStretch
		}
		w := q.waiting[l]
		k := q.plan.next(*q.out, w[:min(len(w), planLimit)], now, &q.stretch, drain, q.workers)
		i := w[k]
		if !g.admits(&(*q.out)[i]) {
			break // the level's next is held back; late work may still go
		}
		q.waiting[l] = slices.Delete(w, k, k+1)
		q.n--
		return i
	}
	if i := q.late.pop(g, now, *q.out); i >= 0 {
		q.n--
		return i
	}
	return -1
}

// moveLate moves the tasks of level l that can no longer make their
// deadline (expected cost stretched by the slowdown, from now) to its late
// work, keeping the rest in deadline order. Time only moves forward; a
// slowdown that falls back could make one feasible again, but late work
// stays late: moved once.
func (q *adaptiveQueue) moveLate(l int, now float64) {
	w := q.waiting[l][:0]
	for _, i := range q.waiting[l] {
		o := &(*q.out)[i]
		if now+q.stretch.of(o.Class)*o.ExpectedMs <= o.DeadlineMs() {
			w = append(w, i)
			continue
		}
		q.late.add(l, i)
	}
	q.waiting[l] = w
}

func (q *adaptiveQueue) Len() int { return q.n }

func (q *adaptiveQueue) each(f func(i int)) {
	for l := range q.waiting {
		eachIdx(q.waiting[l], f)
	}
	q.late.each(f)
}
