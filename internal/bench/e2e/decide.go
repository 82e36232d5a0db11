package e2e

import (
	"context"
	"sync"
	"time"

	"github.com/triage-agent/triage/wire"
)

// LocalAgent is an Agent that can also decide a task from a decision table
// the agent pushed, without a round trip (a *client.Client with
// LocalDecisions on), and by a call whether or not its table could.
type LocalAgent interface {
	Agent
	DecideLocal(t *wire.Task) (priority uint32, ok bool)
	DecideRemote(ctx context.Context, tasks []*wire.Task) (*wire.DecideResponse, error)
}

// decider places the arrivals of an agent run. With Config.Local (and a
// LocalAgent) the dispatcher decides each task from the agent's table
// itself, at once; a task the table does not answer, or every task
// without Local, goes to one of DecideConcurrency goroutines that call the
// agent.
type decider struct {
	r      *run
	local  LocalAgent
	remote func(context.Context, []*wire.Task) (*wire.DecideResponse, error)
	jobs   chan int
	wg     sync.WaitGroup
	task   wire.Task // the dispatcher's, for local decisions

	mu                 sync.Mutex
	lat, remoteLat     []time.Duration
	errs, localN, remN int
}

func (r *run) newDecider(ctx context.Context) *decider {
	d := &decider{r: r, remote: r.cfg.Agent.Decide, jobs: make(chan int, len(r.tasks)), lat: make([]time.Duration, 0, len(r.tasks))}
	if la, ok := r.cfg.Agent.(LocalAgent); ok {
		d.remote = la.DecideRemote
		if r.cfg.Local {
			d.local = la
		}
	}
	for range r.cfg.DecideConcurrency {
		d.wg.Add(1)
		go func() { defer d.wg.Done(); d.callLoop(ctx) }()
	}
	return d
}

// wireTask fills t with arrival i as the agent sees it.
func (r *run) wireTask(i int, t *wire.Task) {
	c := &r.sc.Classes[r.tasks[i].Class]
	t.Id, t.Class, t.SlaMs, t.CostMs, t.Tenant = r.cfg.IDBase+uint64(i)+1, c.Name, float32(r.tasks[i].SLAMs), float32(r.tasks[i].ExpectedMs), c.Tenant
}

// place decides arrival i: locally when it can, else by a call.
func (d *decider) place(i int) {
	if d.local != nil {
		d.r.wireTask(i, &d.task)
		t0 := time.Now()
		if p, ok := d.local.DecideLocal(&d.task); ok {
			el := time.Since(t0)
			d.mu.Lock()
			d.lat = append(d.lat, el)
			d.localN++
			d.mu.Unlock()
			d.r.enqueue(i, int(p), d.r.cfg.AnswerOrder.Key(&d.r.tasks[i]))
			return
		}
	}
	d.jobs <- i
}

func (d *decider) callLoop(ctx context.Context) {
	task := &wire.Task{}
	for i := range d.jobs {
		d.r.wireTask(i, task)
		t0 := time.Now()
		resp, err := d.remote(ctx, []*wire.Task{task})
		el := time.Since(t0)
		level := 0
		ok := err == nil && len(resp.GetDecisions()) == 1 && resp.GetDecisions()[0].GetPriority() <= wire.MaxPriority
		d.mu.Lock()
		if ok {
			level = int(resp.GetDecisions()[0].GetPriority())
			d.lat = append(d.lat, el)
			d.remoteLat = append(d.remoteLat, el)
			d.remN++
		} else {
			d.errs++ // served anyway, at the lowest level
		}
		d.mu.Unlock()
		d.r.enqueue(i, level, d.r.cfg.AnswerOrder.Key(&d.r.tasks[i]))
	}
}

// finish waits for the calls in flight and records the counts in the
// run's result; it returns every decision's latency.
func (d *decider) finish() []time.Duration {
	close(d.jobs)
	d.wg.Wait()
	res := &d.r.res
	res.DecideErrors += d.errs
	res.LocalDecisions, res.RemoteDecisions = d.localN, d.remN
	res.RemoteLatency = d.remoteLat
	return d.lat
}
