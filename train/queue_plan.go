package train

// crowdedPlanStretch is how many times longer than its workers alone would
// take a crowded level's plan counts its queue to drain: under an overload
// more work keeps arriving, some of it with earlier deadlines or at higher
// levels, and takes the workers the plan counted on, so the plan sets the
// longest tasks aside sooner than the workers' speed alone says. Chosen
// on generated scenarios and the project's files among 1, 1.5, 2, 3, 4 and
// 6 (docs/policy-history.md, "A plan that sets the longest aside").
const crowdedPlanStretch = 4

// levelPlan is the plan that serves one level of an adaptiveQueue, after
// Moore and Hodgson's rule for the most deadlines met on one machine:
// take the tasks by deadline; where one would finish past its deadline,
// set aside the longest taken so far, until it would not. The tasks kept
// are served earliest deadline first; those set aside wait for a later
// plan (every pop plans afresh, with the tasks and the slowdown of then).
// Where every deadline can be met nothing is set aside, and the plan is
// earliest deadline first, the order that meets them all; under overload
// it gives up the longest work, as shortest first would, without letting
// short work overtake the rest of its class.
//
// The workers are counted as one machine workers times as fast, each task
// taking its own time on one of them: task j of the plan finishes at
// now + drain × (the kept work before it) / workers + its own cost. The
// buffers are kept between pops, so a plan allocates nothing once they
// have grown to the level's size.
type levelPlan struct {
	cost  []float64 // by place in the deadline-ordered list: the stretched expected cost
	aside []bool    // by place: set aside
	kept  []int     // places kept so far, a max-heap by cost (keptBefore)
}

// next is the place in waiting (indices into out, in deadline order, every
// one able to make its deadline at the stretched cost) of the task the
// plan serves first.
func (p *levelPlan) next(out []Outcome, waiting []int, now float64, stretch *stretches, drain float64, workers int) int {
	n := len(waiting)
	p.cost = append(p.cost[:0], make([]float64, n)...)
	p.aside = append(p.aside[:0], make([]bool, n)...)
	p.kept = p.kept[:0]
	for j, i := range waiting {
		p.cost[j] = stretch.of(out[i].Class) * out[i].ExpectedMs
	}
	m := float64(workers)
	before := 0.0 // kept work ahead of place j
	for j, i := range waiting {
		deadline := out[i].DeadlineMs()
		p.push(j)
		for !p.aside[j] && now+drain*before/m+p.cost[j] > deadline {
			k := p.pop()
			p.aside[k] = true
			if k != j {
				before -= p.cost[k]
			}
		}
		if !p.aside[j] {
			before += p.cost[j]
		}
	}
	for j := range waiting {
		if !p.aside[j] {
			return j
		}
	}
	return 0
}

// keptBefore orders the kept heap: the longer first; of two as long, the
// later in the plan.
func (p *levelPlan) keptBefore(x, y int) bool {
	if p.cost[x] != p.cost[y] {
		return p.cost[x] > p.cost[y]
	}
	return x > y
}

func (p *levelPlan) push(j int) {
	h := append(p.kept, j)
	for c := len(h) - 1; c > 0; {
		parent := (c - 1) / 2
		if !p.keptBefore(h[c], h[parent]) {
			break
		}
		h[c], h[parent] = h[parent], h[c]
		c = parent
	}
	p.kept = h
}

func (p *levelPlan) pop() int {
	h := p.kept
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for c := 0; ; {
		l, r, best := 2*c+1, 2*c+2, c
		if l < len(h) && p.keptBefore(h[l], h[best]) {
			best = l
		}
		if r < len(h) && p.keptBefore(h[r], h[best]) {
			best = r
		}
		if best == c {
			break
		}
		h[c], h[best] = h[best], h[c]
		c = best
	}
	p.kept = h
	return top
}
