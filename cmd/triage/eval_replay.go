package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/guard"
)

// replayBatch is how many logged states one model call decides.
const replayBatch = 256

// classReplay counts, for one task class, the levels the logged agent
// served and the levels the replayed network chooses on the same states.
type classReplay struct {
	records  int
	logged   [policy.NumActions]int
	replayed [policy.NumActions]int
	same     int // replayed level == logged level
	unsure   int // the guard would decide instead of the network
}

// replayer decides logged states again with a model and counts, per
// class, the levels the logged agent served beside the levels this
// model's network chooses on the same states, and how often its guard
// (nil for none) would take the decision over. Records are decided in
// batches as they are read, so a long log costs one batch of memory.
//
// Why: a model's behaviour on a real node is what the simulator predicts
// least (docs/training.md: two retrainings level in simulation served the
// 150 ms class of train-a-overload at opposite levels on the same real
// node). Replaying a real run's states shows, before any real run of the
// candidate, which classes it would move. The states are the logged
// agent's (its queue, not the candidate's), so this is a screen, not a
// result: the kernel features and the task's own come from the real node,
// the queue features from another policy's run.
type replayer struct {
	sess   policy.Decider
	guard  *guard.Guard
	by     map[string]*classReplay
	batch  []experience.Record
	states []policy.State
	out    []policy.Decision
}

func newReplayer(sess policy.Decider, g *guard.Guard) *replayer {
	return &replayer{sess: sess, guard: g, by: map[string]*classReplay{}, out: make([]policy.Decision, replayBatch)}
}

// add queues r and decides the batch when it is full.
func (p *replayer) add(r experience.Record) error {
	p.batch = append(p.batch, r)
	if len(p.batch) < replayBatch {
		return nil
	}
	return p.flush()
}

func (p *replayer) flush() error {
	if len(p.batch) == 0 {
		return nil
	}
	p.states = p.states[:0]
	for i := range p.batch {
		p.states = append(p.states, p.batch[i].State)
	}
	if err := p.sess.Decide(p.states, p.out); err != nil {
		return fmt.Errorf("replaying logged states: %w", err)
	}
	for i := range p.batch {
		c := p.by[p.batch[i].Class]
		if c == nil {
			c = &classReplay{}
			p.by[p.batch[i].Class] = c
		}
		c.records++
		logged, d := int(p.batch[i].Action), &p.out[i]
		if logged < policy.NumActions {
			c.logged[logged]++
		}
		c.replayed[d.Priority]++
		if d.Priority == logged {
			c.same++
		}
		if p.guard != nil && p.guard.Unsure(d) != guard.Network {
			c.unsure++
		}
	}
	p.batch = p.batch[:0]
	return nil
}

// write decides what is left and writes the table.
func (p *replayer) write(w io.Writer) error {
	if err := p.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n### decisions on the logged states: the logged agent's levels, and %s's network on the same states\n\n", p.sess.Version())
	fmt.Fprintln(w, "| class | records | logged 0 / 1 / 2 / 3 / 4 | replayed 0 / 1 / 2 / 3 / 4 | same level | guard would decide |")
	fmt.Fprintln(w, "| --- | ---: | --- | --- | ---: | ---: |")
	for _, name := range slices.Sorted(maps.Keys(p.by)) {
		c := p.by[name]
		fmt.Fprintf(w, "| %s | %d | %s | %s | %.1f%% | %.1f%% |\n", name, c.records, levelCounts(c.logged), levelCounts(c.replayed),
			100*float64(c.same)/float64(c.records), 100*float64(c.unsure)/float64(c.records))
	}
	return nil
}

// levelCounts writes a per-level count as "n0 / n1 / n2 / n3 / n4".
func levelCounts(n [policy.NumActions]int) string {
	parts := make([]string, len(n))
	for i, v := range n {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, " / ")
}
