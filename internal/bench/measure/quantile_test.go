package measure

import (
	"testing"
	"time"

	"github.com/triage-agent/triage/policy"
)

func TestQuantileIsNearestRank(t *testing.T) {
	// Ten samples: nearest rank puts p99 on the largest (ceil(9.9) = 10th);
	// a floor index, int(0.99·9) = 8, would put it on the 9th.
	var ds []time.Duration
	var fs []float64
	for i := 1; i <= 10; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
		fs = append(fs, float64(i))
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0, 1}, {0.1, 1}, {0.11, 2}, {0.5, 5}, {0.9, 9}, {0.99, 10}, {1, 10}} {
		if got := Quantile(ds, c.q); got != c.want*time.Millisecond {
			t.Errorf("q %v: %v, want %v", c.q, got, c.want*time.Millisecond)
		}
		if got, want := Quantile(fs, c.q), policy.NearestRank(fs, c.q); got != want {
			t.Errorf("q %v: %v, policy.NearestRank says %v", c.q, got, want)
		}
	}
	if got := Quantile([]time.Duration(nil), 0.5); got != 0 {
		t.Errorf("empty: %v, want 0", got)
	}
}

func TestMedian(t *testing.T) {
	odd := []float64{5, 1, 4, 2, 3}
	if got := Median(odd); got != 3 {
		t.Errorf("median of %v: %v, want 3", odd, got)
	}
	if odd[0] != 5 {
		t.Errorf("Median sorted its input: %v", odd)
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2 {
		t.Errorf("median of 4 values: %v, want the lower middle one, 2", got)
	}
}
