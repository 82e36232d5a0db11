package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/triage-agent/triage/policy"
)

// batcher runs the decisions of every client through one model call per
// batch. A request waits for the batch in progress to finish (so requests
// that arrive meanwhile ride together), plus at most window for more; the
// added latency is bounded by one model call and window.
//
// The caller that finds no batch in progress runs the model itself, on its
// own goroutine: a decision on an idle agent costs no hand-over to another
// goroutine and back (two wake-ups, each a futex call when the other side
// sleeps, which was most of a batch-1 decision's CPU). Requests that come
// while a batch runs queue; the goroutine that ran it starts a runner for
// them, which serves batches until the queue is empty, so a caller waits
// for at most the batch in progress and its own.
type batcher struct {
	decider policy.Decider
	window  time.Duration
	max     int
	onBatch func(tasks int, took time.Duration)

	mu      sync.Mutex
	queue   []*batchReq // waiting for the batch in progress; never empty unless running
	running bool        // a batch is being gathered or decided
	stopped bool
	arrived chan struct{} // a request queued (wakes a batch that lingers for more)
	active  sync.WaitGroup

	// Owned by whoever runs the batch (running is the lock).
	lead   batchReq // the request of the caller that runs the batch
	batch  []*batchReq
	states []policy.State
	out    []policy.Decision
}

type batchReq struct {
	states  []policy.State
	out     []policy.Decision
	version string
	err     error
	done    chan struct{}
	inline  bool // the request of the caller that runs the batch: not signalled
}

// spinWindow is the longest batch window waited out by yielding rather
// than with a timer.
const spinWindow = time.Millisecond

// ErrStopped is returned for decisions asked after the agent began to stop.
var ErrStopped = errors.New("agent: stopping")

func newBatcher(d policy.Decider, window time.Duration, max int, onBatch func(int, time.Duration)) *batcher {
	return &batcher{decider: d, window: window, max: max, onBatch: onBatch, arrived: make(chan struct{}, 1)}
}

var reqPool = sync.Pool{New: func() any { return &batchReq{done: make(chan struct{}, 1)} }}

// decide fills out for states and returns the version of the model that
// decided. A caller whose ctx ends while it waits for a batch stops
// waiting; its states are still decided with that batch (a batch cannot be
// split once running) and the answer is dropped.
func (b *batcher) decide(ctx context.Context, states []policy.State, out []policy.Decision) (string, error) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return "", ErrStopped
	}
	if !b.running {
		b.running = true
		b.active.Add(1)
		b.mu.Unlock()
		defer b.active.Done()
		own := &b.lead
		own.states, own.out, own.inline = states, out, true
		b.batch = append(b.batch[:0], own)
		b.linger(len(states))
		b.run()
		version, err := own.version, own.err
		*own = batchReq{}
		b.handOver()
		return version, err
	}
	r := reqPool.Get().(*batchReq)
	r.states, r.out, r.err, r.version = states, out, nil, ""
	b.queue = append(b.queue, r)
	b.mu.Unlock()
	select {
	case b.arrived <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
		v, err := r.version, r.err
		r.states, r.out = nil, nil
		reqPool.Put(r)
		return v, err
	case <-ctx.Done():
		// The batch still owns r and will write to r.out: the caller must
		// not reuse out; r is not returned to the pool (the batch drops it).
		return "", ctx.Err()
	}
}

// handOver ends a batch run: queued requests get a runner, or fail when
// the batcher stopped; with none queued the next caller runs its own.
func (b *batcher) handOver() {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case len(b.queue) == 0:
		b.running = false
	case b.stopped:
		b.failQueuedLocked(ErrStopped)
		b.running = false
	default:
		b.active.Add(1)
		go b.runQueued()
	}
}

// runQueued serves the queue batch by batch until it is empty.
func (b *batcher) runQueued() {
	defer b.active.Done()
	for {
		b.mu.Lock()
		if len(b.queue) == 0 || b.stopped {
			b.failQueuedLocked(ErrStopped)
			b.running = false
			b.mu.Unlock()
			return
		}
		b.batch = b.batch[:0]
		n := b.takeLocked(0)
		b.mu.Unlock()
		b.linger(n)
		b.run()
	}
}

// takeLocked moves queued requests into the batch while it holds fewer
// than max tasks (the request that crosses max rides along) and returns
// the batch's task count, n before.
func (b *batcher) takeLocked(n int) int {
	i := 0
	for ; i < len(b.queue) && n < b.max; i++ {
		b.batch = append(b.batch, b.queue[i])
		n += len(b.queue[i].states)
	}
	rest := copy(b.queue, b.queue[i:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	return n
}

// linger waits up to the window for more requests to join a batch of n
// tasks, taking them as they come, until it reaches max.
func (b *batcher) linger(n int) {
	if b.window <= 0 || n >= b.max {
		return
	}
	opened := time.Now()
	var timer *time.Timer
	for n < b.max {
		b.mu.Lock()
		n = b.takeLocked(n)
		b.mu.Unlock()
		left := b.window - time.Since(opened)
		if n >= b.max || left <= 0 {
			break
		}
		if b.window < spinWindow {
			// Go timers fire late by up to a millisecond on a busy
			// machine, which would turn a 50 µs window into 1 ms: wait
			// short windows out by yielding instead (CPU for at most the
			// window, once per batch).
			runtime.Gosched()
			continue
		}
		if timer == nil {
			timer = time.NewTimer(left)
			defer timer.Stop()
		} else {
			timer.Reset(left)
		}
		select {
		case <-b.arrived:
		case <-timer.C:
		}
	}
}

// run decides the batch with one model call and answers its requests.
func (b *batcher) run() {
	// One request is decided into its own slices, no copy.
	states, out := b.batch[0].states, b.batch[0].out
	if len(b.batch) > 1 {
		states = b.states[:0]
		for _, r := range b.batch {
			states = append(states, r.states...)
		}
		if cap(b.out) < len(states) {
			b.out = make([]policy.Decision, len(states))
		}
		out = b.out[:len(states)]
		b.states = states
	}
	start := time.Now()
	version := b.decider.Version()
	err := b.decider.Decide(states, out)
	took := time.Since(start)
	if err != nil {
		err = fmt.Errorf("deciding a batch of %d: %w", len(states), err)
	}
	off := 0
	for i, r := range b.batch {
		k := len(r.states)
		if err == nil && len(b.batch) > 1 {
			copy(r.out, out[off:off+k])
		}
		off += k
		r.version, r.err = version, err
		if !r.inline {
			r.done <- struct{}{}
		}
		b.batch[i] = nil
	}
	b.batch = b.batch[:0]
	if b.onBatch != nil {
		b.onBatch(len(states), took)
	}
}

func (b *batcher) failQueuedLocked(err error) {
	for i, r := range b.queue {
		r.err = err
		r.done <- struct{}{}
		b.queue[i] = nil
	}
	b.queue = b.queue[:0]
}

// close stops taking requests, fails the queued ones and waits for the
// batch in progress.
func (b *batcher) close() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.active.Wait()
}
