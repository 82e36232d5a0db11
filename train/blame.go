package train

import (
	"cmp"
	"slices"
)

// assignBlame charges every task for the waits it caused, after the run:
// each task j that had to wait for a worker (from its arrival to its start,
// or to the run's end when it never started) lost
//
//	loss_j = w_sla·weight_j·[it would have met its SLA started at once, and did not]
//	       + w_lat·(latency_penalty(cost_j) − latency_penalty(latency_j))
//
// in the reward units of its phase, and that loss is shared among the tasks
// that held a worker during the wait, in proportion to how long each held
// it then. A task's Blame is the sum of its shares.
//
// Why, next to Harm: Harm prices only the queued tasks a start overtakes.
// A long task that takes the last free worker of an idle-looking node
// overtakes no one, yet every urgent task arriving in the next few hundred
// milliseconds waits for it. Blame sees that, because it looks at what
// actually waited; it is what teaches the policy to keep long work in the
// background tier (LowestLevel) instead of letting it fill the node.
func assignBlame(out []Outcome, endMs float64) {
	started := make([]int, 0, len(out))
	maxCost := 0.0
	for i := range out {
		out[i].Blame = 0
		if out[i].Started {
			started = append(started, i)
			maxCost = max(maxCost, heldMs(&out[i], endMs))
		}
	}
	slices.SortFunc(started, func(a, b int) int { return cmp.Compare(out[a].StartMs, out[b].StartMs) })
	type share struct {
		i   int
		len float64
	}
	var shares []share
	for j := range out {
		o := &out[j]
		waitEnd := endMs
		if o.Started {
			waitEnd = o.StartMs
		}
		if waitEnd <= o.ArrivalMs {
			continue
		}
		loss := waitLoss(o, endMs)
		if loss <= 0 {
			continue
		}
		// Blockers started before the wait ended and ran past its start.
		hi, _ := slices.BinarySearchFunc(started, waitEnd, func(i int, t float64) int { return cmp.Compare(out[i].StartMs, t) })
		shares = shares[:0]
		total := 0.0
		for k := hi - 1; k >= 0; k-- {
			b := &out[started[k]]
			if b.StartMs+maxCost <= o.ArrivalMs {
				break // no earlier task can still have been running
			}
			if started[k] == j {
				continue
			}
			if ov := min(b.StartMs+heldMs(b, endMs), waitEnd) - max(b.StartMs, o.ArrivalMs); ov > 0 {
				shares = append(shares, share{started[k], ov})
				total += ov
			}
		}
		for _, s := range shares {
			out[s.i].Blame += loss * s.len / total
		}
	}
}

// heldMs is how long a started task held its worker: until it finished,
// or until the run ended.
func heldMs(o *Outcome, endMs float64) float64 {
	if o.Finished {
		return o.ServiceMs()
	}
	return endMs - o.StartMs
}

// waitLoss is what task o lost by waiting: the reward it would have earned
// started on arrival minus the one it earned, SLA and latency terms only.
func waitLoss(o *Outcome, endMs float64) float64 {
	w := PhaseWeights[o.Phase]
	lat := o.LatencyMs()
	if !o.Finished {
		lat = endMs - o.ArrivalMs
	}
	// Started at once it would have taken its service time (its cost,
	// stretched by the node's contention when it ran).
	svc := o.CostMs
	if o.Finished {
		svc = o.ServiceMs()
	}
	loss := w.Lat * (LatencyPenalty(svc, o.SLAMs) - LatencyPenalty(lat, o.SLAMs))
	if svc <= o.SLAMs && !o.Met {
		loss += w.SLA * o.Weight
	}
	return max(0, loss)
}
