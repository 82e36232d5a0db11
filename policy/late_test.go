package policy

import "testing"

// Late background work waits for the reserve as any long background work
// does, and while a short limit is given for a nearly idle node: fewer
// than a quarter of the workers (rounded up) busy.
func TestLateStarts(t *testing.T) {
	calm := Hold{Share: CalmReserve}
	limit := Hold{Share: CalmReserve, ShortMs: 20}
	half := Hold{Share: ContendedReserve, ShortMs: 20}
	for _, c := range []struct {
		name          string
		hold          Hold
		busy, workers int
		want          bool
	}{
		{"no limit, 4 workers, 2 busy: more than the quarter free", calm, 2, 4, true},
		{"no limit, 4 workers, 3 busy: the quarter held", calm, 3, 4, false},
		{"no limit, 2 workers, 1 busy", calm, 1, 2, true},
		{"a limit, 4 workers, idle", limit, 0, 4, true},
		{"a limit, 4 workers, 1 busy", limit, 1, 4, false},
		{"a limit, 2 workers, idle", limit, 0, 2, true},
		{"a limit, 2 workers, 1 busy", limit, 1, 2, false},
		{"a limit, 8 workers, 1 busy", limit, 1, 8, true},
		{"a limit, 8 workers, 2 busy", limit, 2, 8, false},
		{"a limit, 5 workers, 1 busy", limit, 1, 5, true},
		{"the half, 8 workers, 1 busy", half, 1, 8, true},
		{"a whole-node reserve, 8 workers, idle", Hold{Share: 1, ShortMs: 20}, 0, 8, false},
		{"the zero hold, 4 workers, 4 busy", Hold{}, 4, 4, false},
		{"the zero hold, 4 workers, 3 busy", Hold{}, 3, 4, true},
	} {
		if got := c.hold.LateStarts(c.busy, c.workers); got != c.want {
			t.Errorf("%s: LateStarts(%d, %d) = %v, want %v", c.name, c.busy, c.workers, got, c.want)
		}
	}
}
