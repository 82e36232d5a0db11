package guard

import (
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
)

// CanPreview reports whether the guard's controller can answer Preview
// (every controller of policy/control can).
func (g *Guard) CanPreview() bool {
	_, ok := g.c.(control.Previewer)
	return ok
}

// Preview is the level Decide would give task t, which the network decided
// as d, if t arrived now, and the reason, without the controller counting
// t: what the agent's decision tables publish for each cell. ok is false
// when the controller cannot preview (CanPreview); the network's own
// priority is then returned only where it is sure.
func (g *Guard) Preview(t *control.Task, d *policy.Decision) (level int, why Reason, ok bool) {
	why = g.unsureOf(t, d)
	sure := why == Network
	if sure && g.cfg.MinAdvantage <= 0 && !g.urgentInBackground(t, d) {
		return d.Priority, Network, true // no rule could overrule it
	}
	p, can := g.c.(control.Previewer)
	if !can {
		return d.Priority, why, sure
	}
	g.mu.Lock()
	level, _ = p.Preview(t)
	g.mu.Unlock()
	if sure {
		if why = g.overrules(t, d, level); why != Network {
			return level, why, true
		}
		return d.Priority, Network, true
	}
	return level, why, true
}
