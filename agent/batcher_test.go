package agent

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/state"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

func goDecider() policy.Decider {
	return policy.NewGoDecider(policy.BootstrapMLP(), policy.BootstrapMetadata())
}

// Concurrent callers share model calls, and each gets the answer for its
// own states, exactly what the model says for them alone.
func TestBatcherSharesCallsAndRoutesAnswers(t *testing.T) {
	d := goDecider()
	var calls, tasks atomic.Int64
	b := newBatcher(d, 50*time.Millisecond, 1024, func(n int, _ time.Duration) { calls.Add(1); tasks.Add(int64(n)) })
	defer b.close()
	const callers = 16
	var wg sync.WaitGroup
	errs := make(chan string, callers)
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			states := make([]policy.State, 3)
			for i := range states {
				states[i] = policy.Neutral
				states[i][policy.FeatSLA] = float32(c) / callers // the SLA differs per caller
				states[i][policy.FeatCost] = float32(i) / 3
			}
			out := make([]policy.Decision, 3)
			v, err := b.decide(context.Background(), states, out)
			if err != nil || v != policy.BootstrapVersion {
				errs <- "decide: " + err.Error()
				return
			}
			want := make([]policy.Decision, 3)
			d.Decide(states, want)
			for i := range want {
				if want[i] != out[i] {
					errs <- "a caller got another caller's answer"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if tasks.Load() != 3*callers {
		t.Fatalf("batched %d tasks, want %d", tasks.Load(), 3*callers)
	}
	if calls.Load() >= callers {
		t.Fatalf("%d model calls for %d concurrent callers: nothing was batched", calls.Load(), callers)
	}
}

func TestBatcherRespectsMax(t *testing.T) {
	var biggest atomic.Int64
	b := newBatcher(goDecider(), 20*time.Millisecond, 8, func(n int, _ time.Duration) {
		for {
			old := biggest.Load()
			if int64(n) <= old || biggest.CompareAndSwap(old, int64(n)) {
				return
			}
		}
	})
	defer b.close()
	var wg sync.WaitGroup
	for c := 0; c < 20; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := []policy.State{policy.Neutral, policy.Neutral}
			b.decide(context.Background(), s, make([]policy.Decision, 2))
		}()
	}
	wg.Wait()
	// A batch closes once it reaches max; the request that crosses it rides along.
	if biggest.Load() > 8+2 {
		t.Fatalf("a batch of %d tasks, max 8", biggest.Load())
	}
}

func TestBatcherBadStateIsAnError(t *testing.T) {
	b := newBatcher(goDecider(), 0, 64, nil)
	defer b.close()
	bad := policy.Neutral
	bad[3] = 7 // outside [0, 1]
	if _, err := b.decide(context.Background(), []policy.State{bad}, make([]policy.Decision, 1)); err == nil {
		t.Fatal("a state outside [0,1] was decided")
	}
	// The loop survives it.
	if _, err := b.decide(context.Background(), []policy.State{policy.Neutral}, make([]policy.Decision, 1)); err != nil {
		t.Fatal(err)
	}
}

func TestBatcherAfterClose(t *testing.T) {
	b := newBatcher(goDecider(), 0, 64, nil)
	b.close()
	for i := 0; i < 100; i++ { // the stop check must win every time, not half of them
		if _, err := b.decide(context.Background(), []policy.State{policy.Neutral}, make([]policy.Decision, 1)); err != ErrStopped {
			t.Fatalf("after close: %v", err)
		}
	}
}

func TestTracker(t *testing.T) {
	tr := newTracker(time.Second, 3)
	t0 := time.Unix(1000, 0)
	for i := uint64(1); i <= 3; i++ {
		if ev, _ := tr.add(&pendingTask{id: sid(i), decidedAt: t0.Add(time.Duration(i) * time.Millisecond)}, nil); len(ev) != 0 {
			t.Fatalf("evicted %d below max", len(ev))
		}
	}
	if p, ok := tr.finish("2"); !ok || p.id != "2" {
		t.Fatal("finish 2")
	}
	if _, ok := tr.finish("2"); ok {
		t.Fatal("finished twice")
	}
	tr.add(&pendingTask{id: "4", decidedAt: t0.Add(4 * time.Millisecond)}, nil)
	ev, _ := tr.add(&pendingTask{id: "5", decidedAt: t0.Add(5 * time.Millisecond)}, nil)
	if len(ev) != 1 || ev[0].id != "1" {
		t.Fatalf("beyond max evicted %v, want task 1", ev)
	}
	exp := tr.expire(t0.Add(time.Second+4500*time.Microsecond), nil)
	if len(exp) != 2 || exp[0].id != "3" || exp[1].id != "4" || tr.len() != 1 {
		t.Fatalf("expired %d tasks, %d left", len(exp), tr.len())
	}
	// A re-decided id is timed out from its latest decision, once; the
	// decision it replaced comes back to the caller (the guard's controller
	// counts it finished).
	if _, old := tr.add(&pendingTask{id: "5", decidedAt: t0.Add(3 * time.Second)}, nil); old == nil || old.id != "5" || !old.decidedAt.Equal(t0.Add(5*time.Millisecond)) {
		t.Fatalf("re-deciding task 5 replaced %+v, want its first decision", old)
	}
	if exp := tr.expire(t0.Add(3500*time.Millisecond), nil); len(exp) != 0 {
		t.Fatalf("re-decided task expired from its first decision: %v", exp)
	}
}

// The tracker's backlog per priority is the expected work of the tasks
// it tracks: decided adds, finished, evicted and replaced take away.
func TestTrackerBacklog(t *testing.T) {
	tr := newTracker(time.Second, 3)
	t0 := time.Unix(1000, 0)
	add := func(id uint64, action uint8, cost float64) []*pendingTask {
		ev, _ := tr.add(&pendingTask{id: sid(id), action: action, costMs: cost, decidedAt: t0.Add(time.Duration(id) * time.Millisecond)}, nil)
		return ev
	}
	add(1, 4, 10)
	add(2, 0, 200)
	add(3, 4, 5)
	if n, w := tr.load(); n != 3 || w[4] != 15 || w[0] != 200 {
		t.Fatalf("after three: %d tasks, backlog %v", n, w)
	}
	tr.finish("1")
	add(3, 2, 7) // re-decided: its earlier work leaves priority 4
	if _, w := tr.load(); w[4] != 0 || w[2] != 7 || w[0] != 200 {
		t.Fatalf("after finish and re-decision: %v", w)
	}
	add(4, 1, 1)
	if ev := add(5, 1, 1); len(ev) != 1 || ev[0].id != "2" {
		t.Fatalf("evicted %v", ev)
	}
	if _, w := tr.load(); w[0] != 0 || w[1] != 2 {
		t.Fatalf("after evicting the background task: %v", w)
	}
	for _, id := range []string{"3", "4", "5"} {
		tr.finish(id)
	}
	if n, w := tr.load(); n != 0 || w != [policy.NumActions]float64{} {
		t.Fatalf("empty tracker: %d tasks, backlog %v", n, w)
	}
}

func TestTrackerOrderStaysBounded(t *testing.T) {
	tr := newTracker(time.Hour, 100)
	now := time.Unix(0, 0)
	for i := uint64(0); i < 100_000; i++ {
		tr.add(&pendingTask{id: sid(i), decidedAt: now}, nil)
		tr.finish(sid(i))
	}
	if len(tr.order)-tr.head > 8192 {
		t.Fatalf("order holds %d entries for %d live tasks", len(tr.order)-tr.head, tr.len())
	}
}

func sid(i uint64) string { return strconv.FormatUint(i, 10) }

func TestHugeClassNameIsBounded(t *testing.T) {
	long := make([]byte, 1<<20)
	for i := range long {
		long[i] = 'x'
	}
	if got := className(&wire.Task{Class: string(long)}); len(got) != state.MaxClassBytes {
		t.Fatalf("class kept at %d bytes", len(got))
	}
}

// Racing close against callers never leaves a caller waiting.
func TestBatcherCloseWhileDeciding(t *testing.T) {
	for round := 0; round < 50; round++ {
		b := newBatcher(goDecider(), 0, 64, nil)
		var wg sync.WaitGroup
		for c := 0; c < 8; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 20; i++ {
					if _, err := b.decide(context.Background(), []policy.State{policy.Neutral}, make([]policy.Decision, 1)); err != nil && err != ErrStopped {
						t.Error(err)
					}
				}
			}()
		}
		b.close()
		wg.Wait()
	}
}

// blockingDecider holds its first Decide until release is closed.
type blockingDecider struct {
	policy.Decider
	entered, release chan struct{}
	once             sync.Once
}

func (d *blockingDecider) Decide(s []policy.State, out []policy.Decision) error {
	d.once.Do(func() { close(d.entered); <-d.release })
	return d.Decider.Decide(s, out)
}

// A caller that runs the batch answers itself; callers that come while it
// runs wait for the next batch, and one that gives up waiting gets its
// context's error while the others are still answered.
func TestBatcherQueuedCallersWhileABatchRuns(t *testing.T) {
	d := &blockingDecider{Decider: goDecider(), entered: make(chan struct{}), release: make(chan struct{})}
	var calls atomic.Int64
	b := newBatcher(d, 0, 64, func(int, time.Duration) { calls.Add(1) })
	defer b.close()
	first := make(chan error, 1)
	go func() {
		_, err := b.decide(context.Background(), []policy.State{policy.Neutral}, make([]policy.Decision, 1))
		first <- err
	}()
	<-d.entered // the first caller is inside the model
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := b.decide(ctx, []policy.State{policy.Neutral}, make([]policy.Decision, 1))
		gaveUp <- err
	}()
	const waiting = 5
	var wg sync.WaitGroup
	errs := make(chan error, waiting)
	for range waiting {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]policy.Decision, 2)
			_, err := b.decide(context.Background(), []policy.State{policy.Neutral, policy.Neutral}, out)
			if err == nil && out[0].Q == ([policy.NumActions]float32{}) {
				err = errors.New("no Q-values")
			}
			errs <- err
		}()
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller whose context ended: %v", err)
	}
	time.Sleep(10 * time.Millisecond) // let the others queue
	close(d.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The first batch, then the queue in one or a few more.
	if n := calls.Load(); n < 2 || n > 1+waiting+1 {
		t.Fatalf("%d model calls", n)
	}
	if _, err := b.decide(context.Background(), []policy.State{policy.Neutral}, make([]policy.Decision, 1)); err != nil {
		t.Fatalf("after the queue drained: %v", err)
	}
}
