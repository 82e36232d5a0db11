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
