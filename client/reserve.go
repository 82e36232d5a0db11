package client

import (
	"math"
	"sync/atomic"

	"github.com/triage-agent/triage/wire"
)

// reserveCell holds the latest background reserve the agent sent, as float
// bits; 0 until one arrives.
type reserveCell struct{ bits atomic.Uint64 }

// offer keeps x when it is a share an executor may act on
// (wire.ReserveShare); anything else leaves the one before.
func (r *reserveCell) offer(x float32) {
	if share, ok := wire.ReserveShare(x); ok {
		r.bits.Store(math.Float64bits(share))
	}
}

func (r *reserveCell) load() (float64, bool) {
	b := r.bits.Load()
	return math.Float64frombits(b), b != 0
}

// BackgroundReserve is the share of the executor's workers that
// background work (priority 0) should leave free now, as the agent last
// said it (with a decide answer, or the node state of a decision table):
// more while the agent's kernel signals say the node is contended. ok is
// false until the agent has sent one; the executor then keeps its own
// (a quarter of the workers is what the agent sends on a calm node). It
// is never outside (0, 1]. It allocates nothing.
func (c *Client) BackgroundReserve() (share float64, ok bool) { return c.reserve.load() }
