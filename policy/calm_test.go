package policy

import "testing"

func TestCalmCPUsNeedsAKernelThatSaysSo(t *testing.T) {
	short := float32(runqRange.scale(60))  // one runnable thread per CPU on the calibrated node
	long := float32(runqRange.scale(4600)) // 1.5 per CPU
	line := float32(runqRange.scale(ContendedRunqP99Us))
	cases := []struct {
		name     string
		runq     float32
		slowdown float64
		want     bool
	}{
		{"short run queue, slowdown unknown", short, 0, true},
		{"short run queue, work at its cost", short, 1.0, true},
		{"short run queue, work slowed", short, 1.5, false},
		{"long run queue, slowdown unknown", long, 0, false},
		{"long run queue, work at its cost", long, 1.0, false},
		{"at the line", line, 1.0, false},
		{"no kernel (neutral)", 0, 1.0, false},
		{"no kernel, slowdown unknown", 0, 0, false},
	}
	for _, c := range cases {
		var s State
		s[FeatRunqP99] = c.runq
		if got := CalmCPUs(&s, c.slowdown); got != c.want {
			t.Errorf("%s: CalmCPUs = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestShortFreeReleasesOnlyShortWork(t *testing.T) {
	for _, workers := range []int{2, 4, 8, 16} {
		held := Hold{Share: CalmReserve, ShortMs: 20}
		free := held
		free.ShortFree = true
		long0, short0 := held.Held(workers)
		long1, short1 := free.Held(workers)
		if short1 != 0 {
			t.Errorf("%d workers: short work held by %d with ShortFree, want 0", workers, short1)
		}
		if long1 != long0 {
			t.Errorf("%d workers: long work held by %d with ShortFree, %d without: want the same", workers, long1, long0)
		}
		if workers >= 4 && short0 == 0 {
			t.Errorf("%d workers: short work held by nothing without ShortFree, want the calm quarter", workers)
		}
	}
	// Without a short limit (an executor's own quarter) ShortFree changes nothing.
	h := Hold{Share: CalmReserve, ShortFree: true}
	if long, short := h.Held(8); long != 2 || short != 2 {
		t.Errorf("no short limit: Held(8) = %d, %d, want 2, 2", long, short)
	}
}
