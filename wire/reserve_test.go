package wire

import (
	"math"
	"testing"
)

func TestReserveShareRefusesWhatAnExecutorMustNotActOn(t *testing.T) {
	for _, c := range []struct {
		x    float32
		want float64
		ok   bool
	}{
		{0.25, 0.25, true}, {0.5, 0.5, true}, {1, 1, true},
		{0, 0, false}, {-0.5, 0, false}, {1.5, 0, false},
		{float32(math.NaN()), 0, false}, {float32(math.Inf(1)), 0, false},
	} {
		got, ok := ReserveShare(c.x)
		if ok != c.ok || got != c.want {
			t.Errorf("ReserveShare(%v) = %v, %v; want %v, %v", c.x, got, ok, c.want, c.ok)
		}
	}
}

func TestShortAndUrgentLimitsReadWhatIsNotALimitAsNone(t *testing.T) {
	for _, c := range []struct {
		x    float32
		want float64
	}{
		{20, 20}, {0.5, 0.5}, {0, 0}, {-3, 0},
		{float32(math.NaN()), 0}, {float32(math.Inf(1)), 0}, {float32(math.Inf(-1)), 0},
	} {
		if got := ShortMs(c.x); got != c.want {
			t.Errorf("ShortMs(%v) = %v, want %v", c.x, got, c.want)
		}
		if got := UrgentSLAMs(c.x); got != c.want {
			t.Errorf("UrgentSLAMs(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}
