package client

import (
	"math"
	"testing"
)

// The client keeps the reserve and its two limits from one message: a
// share an executor must not act on leaves the three before, a limit that
// is not one reads as none, and the same message again allocates nothing.
func TestReserveCellKeepsOneMessagesReserveAndLimits(t *testing.T) {
	var c Client
	if _, ok := c.BackgroundReserve(); ok || c.BackgroundShortMs() != 0 || c.BackgroundUrgentSLAMs() != 0 {
		t.Fatal("a client that was sent nothing has a reserve or a limit")
	}
	c.reserve.offer(0.5, 10, 80)
	check := func(when string, share, short, urgent float64) {
		t.Helper()
		got, ok := c.BackgroundReserve()
		if !ok || got != share || c.BackgroundShortMs() != short || c.BackgroundUrgentSLAMs() != urgent {
			t.Fatalf("%s: reserve %v (%v), short %v, urgent %v; want %v, %v, %v", when, got, ok, c.BackgroundShortMs(), c.BackgroundUrgentSLAMs(), share, short, urgent)
		}
		if s, sh, u, ok := c.BackgroundHold(); !ok || s != share || sh != short || u != urgent {
			t.Fatalf("%s: BackgroundHold %v, %v, %v (%v); want %v, %v, %v", when, s, sh, u, ok, share, short, urgent)
		}
	}
	check("sent 0.5, 10 ms, 80 ms", 0.5, 10, 80)
	c.reserve.offer(float32(math.NaN()), 5, 20)
	check("then a share that is not one", 0.5, 10, 80)
	c.reserve.offer(0.25, float32(math.Inf(1)), -1)
	check("then limits that are not", 0.25, 0, 0)
	if n := testing.AllocsPerRun(100, func() { c.reserve.offer(0.25, 0, 0) }); n != 0 {
		t.Fatalf("the same message again allocates %v times", n)
	}
}
