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

// None held travels as NoReserve, a share an executor may act on (0 would
// read as "not sent") and one that rounds down to no worker on any node
// up to a million workers; a share held travels as it is.
func TestReserveFieldSendsNoneAsAShareOfNoWorker(t *testing.T) {
	for _, share := range []float64{0, -1} {
		x := ReserveField(share)
		if x != NoReserve {
			t.Fatalf("ReserveField(%v) = %v, want NoReserve", share, x)
		}
		got, ok := ReserveShare(x)
		if !ok {
			t.Fatalf("ReserveShare(NoReserve) refused: an executor would keep the share it had")
		}
		for _, workers := range []float64{1, 2, 64, 4096, 999_999} {
			if held := math.Floor(got*workers + 1e-9); held != 0 {
				t.Errorf("NoReserve on %v workers holds %v, want none", workers, held)
			}
		}
	}
	for _, share := range []float64{0.25, 0.375, 0.5} {
		if got, ok := ReserveShare(ReserveField(share)); !ok || got != share {
			t.Errorf("ReserveField(%v) reads back %v, %v", share, got, ok)
		}
	}
}
