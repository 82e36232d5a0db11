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
type batcher struct {
	decider policy.Decider
	window  time.Duration
	max     int
	reqs    chan *batchReq
	onBatch func(tasks int, took time.Duration)

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

type batchReq struct {
	states  []policy.State
	out     []policy.Decision
	version string
	err     error
	done    chan struct{}
}

// spinWindow is the longest batch window waited out by yielding rather
// than with a timer.
const spinWindow = time.Millisecond

// ErrStopped is returned for decisions asked after the agent began to stop.
var ErrStopped = errors.New("agent: stopping")

func newBatcher(d policy.Decider, window time.Duration, max int, onBatch func(int, time.Duration)) *batcher {
	b := &batcher{
		decider: d, window: window, max: max, onBatch: onBatch,
		reqs: make(chan *batchReq, 1024),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go b.loop()
	return b
}

var reqPool = sync.Pool{New: func() any { return &batchReq{done: make(chan struct{}, 1)} }}

// decide fills out for states and returns the version of the model that
// decided. A caller whose ctx ends stops waiting; its states are still
// decided with the batch (the batch cannot be split once running) and the
// answer is dropped.
func (b *batcher) decide(ctx context.Context, states []policy.State, out []policy.Decision) (string, error) {
	select {
	case <-b.stop:
		return "", ErrStopped
	default:
	}
	r := reqPool.Get().(*batchReq)
	r.states, r.out, r.err, r.version = states, out, nil, ""
	select {
	case b.reqs <- r:
	case <-ctx.Done():
		reqPool.Put(r)
		return "", ctx.Err()
	case <-b.stop:
		reqPool.Put(r)
		return "", ErrStopped
	}
	select {
	case <-r.done:
		v, err := r.version, r.err
		r.states, r.out = nil, nil
		reqPool.Put(r)
		return v, err
	case <-ctx.Done():
		// The loop still owns r and will write to r.out: the caller must not
		// reuse out; r is not returned to the pool (the loop drops it).
		return "", ctx.Err()
	case <-b.done:
		// The loop has exited: it answered r just before, or r was queued
		// after its last drain and nobody will.
		select {
		case <-r.done:
			return r.version, r.err
		default:
			return "", ErrStopped
		}
	}
}

func (b *batcher) loop() {
	defer close(b.done)
	var (
		batch  []*batchReq
		states []policy.State
		out    []policy.Decision
		timer  = time.NewTimer(time.Hour)
	)
	timer.Stop()
	for {
		var first *batchReq
		select {
		case first = <-b.reqs:
		case <-b.stop:
			b.failPending(ErrStopped)
			return
		}
		batch = append(batch[:0], first)
		n := len(first.states)
		opened := time.Now()
		// Take what is already queued, then linger up to window for more.
	drain:
		for n < b.max {
			select {
			case r := <-b.reqs:
				batch = append(batch, r)
				n += len(r.states)
				continue
			default:
			}
			if b.window <= 0 {
				break
			}
			if b.window < spinWindow {
				// Go timers fire late by up to a millisecond on a busy
				// machine, which would turn a 50 µs window into 1 ms: wait
				// short windows out by yielding instead (CPU for at most
				// the window, once per batch).
				if time.Since(opened) >= b.window {
					break
				}
				runtime.Gosched()
				continue
			}
			timer.Reset(b.window)
			select {
			case r := <-b.reqs:
				timer.Stop()
				batch = append(batch, r)
				n += len(r.states)
			case <-timer.C:
				break drain
			}
		}
		states, out = states[:0], out[:0]
		for _, r := range batch {
			states = append(states, r.states...)
		}
		if cap(out) < len(states) {
			out = make([]policy.Decision, len(states))
		}
		out = out[:len(states)]
		start := time.Now()
		version := b.decider.Version()
		err := b.decider.Decide(states, out)
		took := time.Since(start)
		if err != nil {
			err = fmt.Errorf("deciding a batch of %d: %w", len(states), err)
		}
		off := 0
		for _, r := range batch {
			k := len(r.states)
			if err == nil {
				copy(r.out, out[off:off+k])
			}
			off += k
			r.version, r.err = version, err
			r.done <- struct{}{}
		}
		if b.onBatch != nil {
			b.onBatch(len(states), took)
		}
	}
}

func (b *batcher) failPending(err error) {
	for {
		select {
		case r := <-b.reqs:
			r.err = err
			r.done <- struct{}{}
		default:
			return
		}
	}
}

func (b *batcher) close() {
	b.once.Do(func() { close(b.stop) })
	<-b.done
}
