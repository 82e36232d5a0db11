// Package backend is a small serve.Backend over any policy.Decider: what
// `triage bench decide` serves, and what the endpoint, client, cmd and e2e
// tests serve a real model with. The agent proper builds richer per-class
// state in agent/state and does not use it.
package backend

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// Policy is a serve.Backend over any policy.Decider (the plain Go MLP or an
// ONNX Runtime session) and a node-state snapshot that its owner replaces
// with SetState. Each task's state vector takes the node features
// (nodeFeatures) from the snapshot and the task's own (SLA slack, cost,
// class p50 and p99) from the descriptor through policy.Vector, the one
// place the normalisation lives.
type Policy struct {
	decider  policy.Decider
	state    atomic.Pointer[wire.NodeState]
	outcomes atomic.Int64
	scratch  sync.Pool // *decideScratch

	// OnOutcomes, when set, receives every reported batch (before it returns).
	OnOutcomes func([]*wire.Outcome)
}

var _ serve.Backend = (*Policy)(nil)

type decideScratch struct {
	states []policy.State
	out    []policy.Decision
}

// NewPolicy returns a backend deciding with d over snapshot initial (nil
// starts with a neutral snapshot of epoch 0).
func NewPolicy(d policy.Decider, initial *wire.NodeState) *Policy {
	b := &Policy{decider: d}
	b.scratch.New = func() any { return &decideScratch{} }
	if initial == nil {
		initial = &wire.NodeState{Features: append([]float32(nil), policy.Neutral[:]...), Model: d.Version()}
	}
	b.state.Store(initial)
	return b
}

// SetState replaces the snapshot (the caller bumps Epoch); st must not be
// modified afterwards.
func (b *Policy) SetState(st *wire.NodeState) { b.state.Store(st) }

// State implements serve.Backend.
func (b *Policy) State() *wire.NodeState { return b.state.Load() }

// Outcomes is the number of outcomes reported so far.
func (b *Policy) Outcomes() int64 { return b.outcomes.Load() }

// nodeFeatures are the indices of the state vector that describe the node,
// not the task.
var nodeFeatures = [...]int{
	policy.FeatQueue, policy.FeatAccelMem, policy.FeatRunqP50, policy.FeatRunqP99,
	policy.FeatAcceptQueue, policy.FeatBlkioP99, policy.FeatCPUUtil, policy.FeatNetOrSyscall,
	policy.FeatWaitP50, policy.FeatWaitP99,
}

// Decide implements serve.Backend.
func (b *Policy) Decide(_ context.Context, tasks []*wire.Task) ([]*wire.Decision, string, uint64, error) {
	st := b.state.Load()
	sc := b.scratch.Get().(*decideScratch)
	defer b.scratch.Put(sc)
	n := len(tasks)
	if cap(sc.states) < n {
		sc.states = make([]policy.State, n)
		sc.out = make([]policy.Decision, n)
	}
	states, out := sc.states[:n], sc.out[:n]
	feats := st.GetFeatures()
	for i, t := range tasks {
		sla, cost := float64(t.GetSlaMs()), float64(t.GetCostMs())
		if cost <= 0 {
			cost = -1 // unknown: neutral
		}
		in := policy.Inputs{
			QueueLen: -1, Workers: -1, SLAMs: sla, CostMs: cost, WaitP50Ms: -1, WaitP99Ms: -1,
			ClassP50Ms: -1, ClassP99Ms: -1, AccelMemFill: -1, RunqP50Us: -1, RunqP99Us: -1,
			AcceptQueueFill: -1, BlkioP99Us: -1, CPUUtil: -1, RetransFraction: -1,
		}
		states[i] = policy.Vector(&in)
		if len(feats) == policy.NumFeatures {
			for _, f := range nodeFeatures {
				if v := float64(feats[f]); !math.IsNaN(v) {
					states[i][f] = float32(min(max(v, 0), 1))
				}
			}
		}
	}
	if err := b.decider.Decide(states, out); err != nil {
		return nil, "", 0, fmt.Errorf("policy %s: %w", b.decider.Version(), err)
	}
	// One allocation for the messages and one for their Q values.
	msgs := make([]wire.Decision, n)
	qs := make([]float32, n*policy.NumActions)
	res := make([]*wire.Decision, n)
	for i := range out {
		q := qs[i*policy.NumActions : (i+1)*policy.NumActions : (i+1)*policy.NumActions]
		copy(q, out[i].Q[:])
		msgs[i].Id, msgs[i].TaskId, msgs[i].Priority, msgs[i].Q = tasks[i].GetId(), tasks[i].GetTaskId(), uint32(out[i].Priority), q
		res[i] = &msgs[i]
	}
	return res, b.decider.Version(), st.GetEpoch(), nil
}

// ReportOutcomes implements serve.Backend.
func (b *Policy) ReportOutcomes(_ context.Context, outs []*wire.Outcome) error {
	for _, o := range outs {
		if err := wire.CheckOutcome(o); err != nil {
			return err
		}
	}
	b.outcomes.Add(int64(len(outs)))
	if b.OnOutcomes != nil {
		b.OnOutcomes(outs)
	}
	return nil
}
