package policy

import (
	"math"
	"testing"
)

// The short limit is the tightest foreground SLA over the slowdown (read
// as 1 while unknown or under 1), and none while no SLA is known.
func TestShortBackgroundMs(t *testing.T) {
	for _, c := range []struct {
		name                string
		sla, slowdown, want float64
	}{
		{"calm work", 20, 1, 20},
		{"twice slower: half as long", 20, 2, 10},
		{"slowdown unknown", 20, math.NaN(), 20},
		{"faster than described reads 1", 20, 0.5, 20},
		{"slowdown infinite reads 1", 20, math.Inf(1), 20},
		{"no foreground SLA", 0, 1.5, 0},
		{"SLA unknown", math.NaN(), 1.5, 0},
		{"SLA infinite", math.Inf(1), 1.5, 0},
	} {
		if got := ShortBackgroundMs(c.sla, c.slowdown); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: ShortBackgroundMs(%v, %v) = %v, want %v", c.name, c.sla, c.slowdown, got, c.want)
		}
	}
}

// Without a short limit background work leaves the reserve free, short or
// long; with one, short work leaves the calm quarter (none from
// ShortUnheldWorkers workers) and long work the reserve, but at least one
// worker of two or more.
func TestHoldKeepsAWorkerFromLongBackgroundWork(t *testing.T) {
	for _, c := range []struct {
		name              string
		hold              Hold
		workers           int
		wantLong, wantShr int
	}{
		{"two workers, calm, no limit", Hold{Share: CalmReserve}, 2, 0, 0},
		{"two workers, calm, a limit", Hold{Share: CalmReserve, ShortMs: 20}, 2, 1, 0},
		{"three workers, calm, a limit", Hold{Share: CalmReserve, ShortMs: 20}, 3, 1, 0},
		{"two workers, contended, a limit", Hold{Share: ContendedReserve, ShortMs: 20}, 2, 1, 0},
		{"one worker: never held", Hold{Share: CalmReserve, ShortMs: 20}, 1, 0, 0},
		{"nothing reserved, a limit", Hold{ShortMs: 20}, 2, 1, 0},
		{"four workers, calm, a limit: the quarter", Hold{Share: CalmReserve, ShortMs: 20}, 4, 1, 1},
		{"four workers, contended, a limit", Hold{Share: ContendedReserve, ShortMs: 20}, 4, 2, 1},
		{"four workers, contended, no limit", Hold{Share: ContendedReserve}, 4, 2, 2},
		{"a limit that is not a number", Hold{Share: CalmReserve, ShortMs: math.NaN()}, 2, 0, 0},
		{"six workers, calm, a limit: the quarter", Hold{Share: CalmReserve, ShortMs: 20}, 6, 1, 1},
		{"seven workers, contended, a limit: the quarter", Hold{Share: ContendedReserve, ShortMs: 20}, 7, 3, 1},
		{"eight workers, calm, a limit: none for short work", Hold{Share: CalmReserve, ShortMs: 20}, 8, 2, 0},
		{"eight workers, contended, a limit: none for short work", Hold{Share: ContendedReserve, ShortMs: 20}, 8, 4, 0},
		{"sixteen workers, calm, a limit: none for short work", Hold{Share: CalmReserve, ShortMs: 20}, 16, 4, 0},
		{"eight workers, calm, no limit: the reserve for all", Hold{Share: CalmReserve}, 8, 2, 2},
		{"eight workers, nothing reserved, a limit", Hold{ShortMs: 20}, 8, 1, 0},
	} {
		long, short := c.hold.Held(c.workers)
		if long != c.wantLong || short != c.wantShr {
			t.Errorf("%s: Held(%d) = %d, %d; want %d, %d", c.name, c.workers, long, short, c.wantLong, c.wantShr)
		}
	}
}

// The urgent limit is four times the tightest foreground SLA, none while
// no SLA is known; a background task is urgent under it only with an SLA
// known and within it.
func TestUrgentBackgroundSLAMs(t *testing.T) {
	for _, c := range []struct {
		name      string
		sla, want float64
	}{
		{"a foreground SLA", 20, 80},
		{"no foreground SLA", 0, 0},
		{"SLA unknown", math.NaN(), 0},
		{"SLA infinite", math.Inf(1), 0},
		{"SLA negative", -5, 0},
	} {
		if got := UrgentBackgroundSLAMs(c.sla); got != c.want {
			t.Errorf("%s: UrgentBackgroundSLAMs(%v) = %v, want %v", c.name, c.sla, got, c.want)
		}
	}
	h := Hold{Share: ContendedReserve, UrgentSLAMs: UrgentBackgroundSLAMs(20)}
	for _, c := range []struct {
		sla  float64
		want bool
	}{{20, true}, {80, true}, {80.5, false}, {2000, false}, {0, false}, {math.NaN(), false}} {
		if got := h.Urgent(c.sla); got != c.want {
			t.Errorf("Urgent(%v) under a limit of 80 ms = %v, want %v", c.sla, got, c.want)
		}
	}
	if (Hold{Share: ContendedReserve}).Urgent(1) {
		t.Error("a hold without an urgent limit lets a task of 1 ms SLA through")
	}
}
