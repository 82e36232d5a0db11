package client

import (
	"sync/atomic"

	"github.com/triage-agent/triage/wire"
)

// reserveCell holds the latest background reserve the agent sent and the
// short and urgent limits sent with it, as one value, so a reader never
// sees the share of one message beside a limit of another; none until one
// arrives.
type reserveCell struct{ p atomic.Pointer[reserveSent] }

// reserveSent is one message's background reserve and its limits.
type reserveSent struct{ share, shortMs, urgentSLAMs float64 }

// offer keeps share, shortMs and urgentSLAMs when share is one an executor
// may act on (wire.ReserveShare); anything else leaves the three before. A
// limit that is not one (wire.ShortMs, wire.UrgentSLAMs) is kept as 0:
// none. The same values as those kept allocate nothing.
func (r *reserveCell) offer(share, shortMs, urgentSLAMs float32) {
	s, ok := wire.ReserveShare(share)
	if !ok {
		return
	}
	next := reserveSent{share: s, shortMs: wire.ShortMs(shortMs), urgentSLAMs: wire.UrgentSLAMs(urgentSLAMs)}
	if cur := r.p.Load(); cur != nil && *cur == next {
		return
	}
	kept := new(reserveSent) // only a change allocates: next stays on the stack
	*kept = next
	r.p.Store(kept)
}

func (r *reserveCell) load() (reserveSent, bool) {
	if p := r.p.Load(); p != nil {
		return *p, true
	}
	return reserveSent{}, false
}

// BackgroundReserve is the share of the executor's workers that
// background work (priority 0) should leave free now, as the agent last
// said it (with a decide answer, or the node state of a decision table):
// more while the agent's kernel signals say the node is contended. ok is
// false until the agent has sent one; the executor then keeps its own
// (a quarter of the workers is what the agent sends on a calm node). It
// is never outside (0, 1]; round share × workers down: where the agent
// holds nothing back it sends wire.NoReserve, a share of no worker. It
// allocates nothing.
func (c *Client) BackgroundReserve() (share float64, ok bool) {
	r, ok := c.reserve.load()
	return r.share, ok
}

// BackgroundHold is the background reserve and both limits of the same
// message (BackgroundReserve, BackgroundShortMs, BackgroundUrgentSLAMs),
// read at once: what an executor that honours them reads, so it never
// acts on the share of one message beside a limit of another. ok is false
// until the agent has sent one. It allocates nothing.
func (c *Client) BackgroundHold() (share, shortMs, urgentSLAMs float64, ok bool) {
	r, ok := c.reserve.load()
	return r.share, r.shortMs, r.urgentSLAMs, ok
}

// BackgroundShortMs is the expected cost (ms) up to which a background
// task may still start while the reserve (BackgroundReserve) holds more
// than a quarter of the workers, as long as more than a quarter are free
// (on a node of eight workers or more, as long as any is; the agent's
// executors follow policy.Hold.Held):
// the agent sends the tightest SLA of its recent foreground over the
// node's slowdown (policy.ShortBackgroundMs), with the reserve it goes
// with. 0, none, until the agent has sent one, or from an agent from
// before it. It allocates nothing.
func (c *Client) BackgroundShortMs() float64 {
	r, _ := c.reserve.load()
	return r.shortMs
}

// BackgroundUrgentSLAMs is the SLA (ms) up to which a background task
// that can still meet it may start whatever the reserve holds, as
// foreground work does: the agent sends four times the tightest SLA of its
// recent foreground (policy.UrgentBackgroundSLAMs), with the reserve it
// goes with. 0, none, until the agent has sent one, or from an agent from
// before it. It allocates nothing.
func (c *Client) BackgroundUrgentSLAMs() float64 {
	r, _ := c.reserve.load()
	return r.urgentSLAMs
}
