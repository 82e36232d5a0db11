package train

import (
	"container/heap"

	"github.com/triage-agent/triage/policy"
)

// feasibleWork is the expected work of the queued tasks that can still
// start in time (now + expected ≤ deadline), per level: what
// NodeView.WaitMs water-fills onto the workers. It is kept as tasks are
// queued and started, so that a question costs the levels and the tasks
// that turned late since the last one, not a pass over the queue. Why:
// slack-rule asks it for every task, and on a file of 96,000 tasks whose
// long class queues by the thousand (testdata/outside/out-ms-and-minutes)
// the pass per decision took two minutes of a one-seed eval's 103 s.
//
// A counted task stops counting once now passes its latest start
// (deadline − expected); time only moves forward, so it never counts
// again. The zero value is not ready: use newFeasibleWork.
type feasibleWork struct {
	out     *[]Outcome
	sum     [policy.NumActions]float64
	n       [policy.NumActions]int       // tasks counted in sum, to reset it exactly when none are
	byStart [policy.NumActions]indexHeap // each level's counted tasks by latest start
	counted []bool                       // by task index
}

func newFeasibleWork(out *[]Outcome) *feasibleWork {
	f := &feasibleWork{out: out, counted: make([]bool, len(*out))}
	for l := range f.byStart {
		f.byStart[l] = outcomeHeap(out, byLatestStart)
	}
	return f
}

// byLatestStart orders tasks by the last time they can start and still
// meet their deadline at their expected cost.
func byLatestStart(x, y *Outcome) bool {
	lx, ly := x.DeadlineMs()-x.ExpectedMs, y.DeadlineMs()-y.ExpectedMs
	if lx != ly {
		return lx < ly
	}
	return x.ID < y.ID
}

// queued counts task i, just queued at now, if it can still start in time.
func (f *feasibleWork) queued(i int, now float64) {
	o := &(*f.out)[i]
	if !(now+o.ExpectedMs <= o.DeadlineMs()) {
		return
	}
	f.counted[i] = true
	f.sum[o.Level] += o.ExpectedMs
	f.n[o.Level]++
	heap.Push(&f.byStart[o.Level], i)
}

// started stops counting task i, which left the queue for a worker.
func (f *feasibleWork) started(i int) { f.uncount(i) }

func (f *feasibleWork) uncount(i int) {
	if !f.counted[i] {
		return
	}
	o := &(*f.out)[i]
	f.counted[i] = false
	f.n[o.Level]--
	f.sum[o.Level] -= o.ExpectedMs
	if f.n[o.Level] == 0 {
		f.sum[o.Level] = 0 // no rounding left behind by the subtractions
	}
}

// atOrAbove is the expected work queued at level or above that can still
// start in time at now.
func (f *feasibleWork) atOrAbove(level int, now float64) float64 {
	q := 0.0
	for l := max(level, 0); l < policy.NumActions; l++ {
		h := &f.byStart[l]
		for h.Len() > 0 {
			top := &(*f.out)[h.idx[0]]
			if f.counted[h.idx[0]] && now+top.ExpectedMs <= top.DeadlineMs() {
				break
			}
			f.uncount(heap.Pop(h).(int))
		}
		q += f.sum[l]
	}
	return q
}
