package client

import (
	"math"
	"sync/atomic"

	"github.com/triage-agent/triage/wire"
)

// reserveCell holds the latest background reserve the agent sent and the
// short limit sent with it, as two float32s in one word, so a reader never
// sees the share of one message beside the limit of another; 0 until one
// arrives.
type reserveCell struct{ bits atomic.Uint64 }

// offer keeps share and shortMs when share is one an executor may act on
// (wire.ReserveShare); anything else leaves the pair before. A short limit
// that is not one (wire.ShortMs) is kept as 0: none.
func (r *reserveCell) offer(share, shortMs float32) {
	if _, ok := wire.ReserveShare(share); ok {
		short := float32(wire.ShortMs(shortMs))
		r.bits.Store(uint64(math.Float32bits(share))<<32 | uint64(math.Float32bits(short)))
	}
}

func (r *reserveCell) load() (share, shortMs float64, ok bool) {
	b := r.bits.Load()
	return float64(math.Float32frombits(uint32(b >> 32))), float64(math.Float32frombits(uint32(b))), b != 0
}

// BackgroundReserve is the share of the executor's workers that
// background work (priority 0) should leave free now, as the agent last
// said it (with a decide answer, or the node state of a decision table):
// more while the agent's kernel signals say the node is contended. ok is
// false until the agent has sent one; the executor then keeps its own
// (a quarter of the workers is what the agent sends on a calm node). It
// is never outside (0, 1]. It allocates nothing.
func (c *Client) BackgroundReserve() (share float64, ok bool) {
	share, _, ok = c.reserve.load()
	return share, ok
}

// BackgroundShortMs is the expected cost (ms) up to which a background
// task may still start while the reserve (BackgroundReserve) holds more
// than a quarter of the workers, as long as more than a quarter are free:
// the agent sends the tightest SLA of its recent foreground over the
// node's slowdown (policy.ShortBackgroundMs), with the reserve it goes
// with. 0, none, until the agent has sent one, or from an agent from
// before it. It allocates nothing.
func (c *Client) BackgroundShortMs() float64 {
	_, short, _ := c.reserve.load()
	return short
}
