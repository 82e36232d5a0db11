package client

import (
	"math"
	"testing"
)

// The client keeps the reserve, its two limits and the short-free verdict
// from one message: a share an executor must not act on leaves the four
// before, a limit that
// is not one reads as none, and the same message again allocates nothing.
func TestReserveCellKeepsOneMessagesReserveAndLimits(t *testing.T) {
	var c Client
	if _, ok := c.BackgroundReserve(); ok || c.BackgroundShortMs() != 0 || c.BackgroundUrgentSLAMs() != 0 {
		t.Fatal("a client that was sent nothing has a reserve or a limit")
	}
	c.reserve.offer(0.5, 10, 80, true)
	check := func(when string, share, short, urgent float64, free bool) {
		t.Helper()
		got, ok := c.BackgroundReserve()
		if !ok || got != share || c.BackgroundShortMs() != short || c.BackgroundUrgentSLAMs() != urgent {
			t.Fatalf("%s: reserve %v (%v), short %v, urgent %v; want %v, %v, %v", when, got, ok, c.BackgroundShortMs(), c.BackgroundUrgentSLAMs(), share, short, urgent)
		}
		if s, sh, u, f, ok := c.BackgroundHold(); !ok || s != share || sh != short || u != urgent || f != free {
			t.Fatalf("%s: BackgroundHold %v, %v, %v, %v (%v); want %v, %v, %v, %v", when, s, sh, u, f, ok, share, short, urgent, free)
		}
		if c.BackgroundShortFree() != free {
			t.Fatalf("%s: BackgroundShortFree %v, want %v", when, c.BackgroundShortFree(), free)
		}
	}
	check("sent 0.5, 10 ms, 80 ms, short free", 0.5, 10, 80, true)
	c.reserve.offer(float32(math.NaN()), 5, 20, false)
	check("then a share that is not one", 0.5, 10, 80, true)
	c.reserve.offer(0.25, float32(math.Inf(1)), -1, false)
	check("then limits that are not", 0.25, 0, 0, false)
	if n := testing.AllocsPerRun(100, func() { c.reserve.offer(0.25, 0, 0, false) }); n != 0 {
		t.Fatalf("the same message again allocates %v times", n)
	}
}
