package e2e

import (
	"math"
	"testing"
)

func TestHistQuantile(t *testing.T) {
	bs := []bucket{{0.001, 50}, {0.002, 90}, {0.004, 100}, {math.Inf(1), 100}}
	if got := histQuantile(bs, 0.5); got != 0.001 {
		t.Fatalf("p50 = %v", got)
	}
	if got := histQuantile(bs, 0.7); math.Abs(got-0.0015) > 1e-12 {
		t.Fatalf("p70 = %v", got)
	}
	if got := histQuantile(bs, 0.99); math.Abs(got-0.0038) > 1e-12 {
		t.Fatalf("p99 = %v", got)
	}
	if histQuantile(nil, 0.5) != 0 {
		t.Fatal("empty")
	}
}
