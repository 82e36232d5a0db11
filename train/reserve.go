package train

import "github.com/triage-agent/triage/policy"

// Reserver is a policy that tells the executor, with each decision, the
// share of the workers that background work must leave free
// (policy.Reserve): the agent's policy does, from the node state it
// decided with and the work's slowdown, and the agent sends it with every
// node state and answer.
// The simulator holds the share the latest decision gave until the next
// one, as an executor holds the latest it was told. A policy without it
// (the baselines, which read no kernel) gets policy.CalmReserve.
type Reserver interface {
	Reserve(v *NodeView) float64
}

// Reserve implements Reserver: the reserve of the state the network sees,
// sized to the foreground as the agent sizes it.
func (p *GuardedPolicy) Reserve(v *NodeView) float64 { return servedReserve(v, blindTo(p.Decider)) }

// Reserve implements Reserver, as GuardedPolicy's.
func (p *DeciderPolicy) Reserve(v *NodeView) float64 { return servedReserve(v, blindTo(p.Decider)) }

// Reserve implements Reserver: the trainer's episodes and checkpoint
// validation run under the reserve the agent served when the shipped model
// was trained (policy.Reserve, unsized), so that `make model` rebuilds it
// bit for bit; training and serving share policy.Reserve, as they share
// policy.Vector. The served reserve is sized to the foreground
// (servedReserve).
func (p *MLPPolicy) Reserve(v *NodeView) float64 { return seenReserve(v, nil) }

// Reserve implements Reserver: blind to the kernel, as it decides.
func (p *blindMLP) Reserve(v *NodeView) float64 { return seenReserve(v, policy.KernelFeatures) }

// Reserve implements Reserver, as MLPPolicy's: the behaviour policy of
// training, whoever (network, teacher, exploration) decided the task.
func (e explorer) Reserve(v *NodeView) float64 { return seenReserve(v, nil) }

// ShortServer is a Reserver that lets short background work past the
// contended part of its reserve (policy.ShortBackgroundMs), and background
// work as urgent as the foreground past all of it
// (policy.UrgentBackgroundSLAMs), as the agent serves it: the served
// policies, not the trainer's, so that `make model` rebuilds the shipped
// model as it was trained.
type ShortServer interface {
	ShortBackgroundMs(v *NodeView) float64
}

// ShortBackgroundMs implements ShortServer, as the agent serves it.
func (p *GuardedPolicy) ShortBackgroundMs(v *NodeView) float64 { return servedShort(v) }

// ShortBackgroundMs implements ShortServer, as GuardedPolicy's.
func (p *DeciderPolicy) ShortBackgroundMs(v *NodeView) float64 { return servedShort(v) }

// servedShort is the short limit the agent serves: it reads no kernel
// feature, so a policy blind to them serves the same.
func servedShort(v *NodeView) float64 {
	return policy.ShortBackgroundMs(v.ForegroundSLAMs, v.Slowdown)
}

// seenReserve is policy.Reserve of the node as a policy blind to the
// features off sees it: with the kernel features neutral, a model asks
// for the reserve of the work's slowdown alone (the calm one while it is
// unknown), as the agent with `--ablate kernel` does.
func seenReserve(v *NodeView, off []int) float64 {
	st := seenState(v, off)
	return policy.Reserve(&st, v.Slowdown)
}

// servedReserve is the reserve the agent serves (policy.ServedReserve) of
// the node as a policy blind to the features off sees it: seenReserve's,
// a contended one sized to the foreground's recent load where the run
// queue does not say the CPUs are oversubscribed, none where no
// foreground task arrived for policy.ForegroundGoneMs on a calm node whose
// run queue is short (policy.NoForegroundToProtect), and no more than the
// workers beyond the node's CPUs where it has gone from oversubscribed
// CPUs (policy.ReserveOnBusyCPUs).
func servedReserve(v *NodeView, off []int) float64 {
	st := seenState(v, off)
	return policy.ServedReserve(&st, v.Slowdown, policy.Foreground{Workers: v.ForegroundWorkers, IdleMs: v.ForegroundIdleMs}, v.Workers, v.CPUs)
}

// seenState is the node's state as a policy blind to the features off
// sees it: those features at their neutral values.
func seenState(v *NodeView, off []int) policy.State {
	st := v.State
	neutralise(&st, off)
	return st
}

// blindTo is the features d decides without: an AblatedDecider's, else
// none.
func blindTo(d policy.Decider) []int {
	if a, ok := d.(*AblatedDecider); ok {
		return a.Off
	}
	return nil
}
