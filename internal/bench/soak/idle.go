package soak

import (
	"context"
	"time"
)

// Under load the agent's goroutine count moves with the work in flight
// (a churned connection is a handful of goroutines for a few
// milliseconds), so the start and end medians differ by a few either way.
// A leak is what the load leaves behind: the count with no load on the
// agent, before the load and after it, is the check that tells.
//
// The wait after the load is the agent's QUIC idle timeout (30 s) and a
// margin: a client that vanished without a close (its close packet lost
// on a loopback under load) holds its connection's goroutines on the
// agent until that timeout ends them. With 15 s, one such connection once
// left 22 goroutines against 21 before the load, which is no leak.
const (
	idleSettle    = time.Second      // scrapes taken before the load
	idleAfterWait = 35 * time.Second // most time for the load's connections to close
	idleEvery     = 200 * time.Millisecond
)

// idleGoroutines scrapes the agent's goroutine count every idleEvery for
// up to wait and returns the least seen (a timer's or a closing
// connection's goroutine may be there for a moment); it stops early once
// the count is at most target. 0 when no scrape answered.
func idleGoroutines(ctx context.Context, ap *agentProc, wait time.Duration, target int) int {
	least := 0
	deadline := time.Now().Add(wait)
	for {
		if g, ok := ap.Scrape()["go_goroutines"]; ok && (least == 0 || int(g) < least) {
			least = int(g)
		}
		if (least > 0 && least <= target) || time.Now().After(deadline) {
			return least
		}
		select {
		case <-ctx.Done():
			return least
		case <-time.After(idleEvery):
		}
	}
}
