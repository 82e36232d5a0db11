package agent

import (
	"sync"
	"time"

	"github.com/triage-agent/triage/agent/state"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
)

// tracker is the node task queue as the agent sees it: every task it
// decided and has not seen finish. Its length is feature 0. A task whose
// outcome never comes is dropped after the timeout (and logged as timed
// out), so a client that forgets outcomes cannot grow it without bound;
// beyond max tasks the oldest is timed out early.
//
// Task ids are the upstream's opaque strings (wire.TaskID: a numeric id is
// its decimal form); two clients that reuse an id collide, and the later
// decision replaces the earlier one (the earlier then never finishes, which
// is what the node would see too). An id is at most wire.MaxTaskIDBytes, so
// the tracked ids take at most MaxPending × 128 bytes.
type tracker struct {
	mu    sync.Mutex
	tasks map[string]*pendingTask
	// work is the expected work (ms) of the tracked tasks per priority they
	// were given: features 17 to 19.
	work    [policy.NumActions]float64
	order   []orderEntry // decision order, for timeouts; may hold finished ids
	head    int
	timeout time.Duration
	max     int
}

type pendingTask struct {
	id        string
	desc      state.Descriptor // class already cut to state.MaxClassBytes
	state     policy.State
	action    uint8
	costMs    float64 // the expected cost the state was built with (0 when unknown)
	q         [policy.NumActions]float32
	model     string
	decidedAt time.Time
	// ctl is the task as the guard's controller knows it (arrival on the
	// agent's clock, SLA, expected cost); kept here, in the task's own
	// allocation, so that guarding a decision allocates nothing more.
	ctl control.Task
}

type orderEntry struct {
	id string
	at time.Time
}

func newTracker(timeout time.Duration, max int) *tracker {
	return &tracker{tasks: map[string]*pendingTask{}, timeout: timeout, max: max}
}

// add records a decided task and returns the tasks it pushed out (beyond
// max), and the earlier decision of the same id that it replaced, if any.
func (t *tracker) add(p *pendingTask, evicted []*pendingTask) (_ []*pendingTask, replaced *pendingTask) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.tasks[p.id]; ok {
		t.untrack(old)
		replaced = old
	}
	t.tasks[p.id] = p
	t.work[p.action] += p.costMs
	t.order = append(t.order, orderEntry{p.id, p.decidedAt})
	for len(t.tasks) > t.max && t.head < len(t.order) {
		evicted = t.popOldest(evicted)
	}
	t.compact()
	return evicted, replaced
}

// popOldest consumes the oldest order entry; its task, if that decision is
// still tracked (not finished, not replaced by a later one), leaves the
// queue and is appended to out.
func (t *tracker) popOldest(out []*pendingTask) []*pendingTask {
	e := t.order[t.head]
	t.head++
	if t.current(e) {
		out = append(out, t.tasks[e.id])
		t.untrack(t.tasks[e.id])
		delete(t.tasks, e.id)
	}
	return out
}

// untrack takes p's expected work off the backlog of its priority (before
// p leaves tasks). Sums of floats drift: the backlog never goes below zero,
// and restarts from exactly zero when the last task leaves.
func (t *tracker) untrack(p *pendingTask) {
	t.work[p.action] = max(0, t.work[p.action]-p.costMs)
	if len(t.tasks) <= 1 {
		t.work = [policy.NumActions]float64{}
	}
}

// current reports whether order entry e is the tracked decision of its task.
func (t *tracker) current(e orderEntry) bool {
	q, ok := t.tasks[e.id]
	return ok && q.decidedAt.Equal(e.at)
}

// finish removes and returns a task whose outcome came.
func (t *tracker) finish(id string) (*pendingTask, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.tasks[id]
	if ok {
		t.untrack(p)
		delete(t.tasks, id)
	}
	return p, ok
}

// expire removes the tasks decided before now-timeout.
func (t *tracker) expire(now time.Time, out []*pendingTask) []*pendingTask {
	t.mu.Lock()
	defer t.mu.Unlock()
	cut := now.Add(-t.timeout)
	for t.head < len(t.order) && t.order[t.head].at.Before(cut) {
		out = t.popOldest(out)
	}
	t.compact()
	return out
}

// compact drops the consumed prefix of order once it is most of the slice,
// and the entries of finished tasks once they outnumber live ones 4:1.
func (t *tracker) compact() {
	live := len(t.order) - t.head
	if t.head > 1024 && t.head > live {
		t.order = append(t.order[:0], t.order[t.head:]...)
		t.head = 0
	}
	if live > 4096 && live > 4*len(t.tasks) {
		kept := t.order[:0]
		for _, e := range t.order[t.head:] {
			if t.current(e) {
				kept = append(kept, e)
			}
		}
		t.order, t.head = kept, 0
	}
}

func (t *tracker) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.tasks)
}

// load is the tracked tasks and their expected work per priority.
func (t *tracker) load() (int, [policy.NumActions]float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.tasks), t.work
}
