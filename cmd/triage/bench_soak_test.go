package main

import (
	"errors"
	"testing"

	"github.com/triage-agent/triage/internal/bench/soak"
)

// `triage bench soak` is registered and refuses a run that leaves nothing
// after its warm-up before it starts anything.
func TestBenchSoakRefusesARunShorterThanItsWarmup(t *testing.T) {
	if benches["soak"] == nil {
		t.Fatal("triage bench soak is not registered")
	}
	err := runBenchSoak([]string{"--duration", "30s", "--warmup", "1m"})
	if !errors.Is(err, soak.ErrBadConfig) {
		t.Fatalf("--duration 30s --warmup 1m: %v, want soak.ErrBadConfig", err)
	}
	if err := runBenchSoak([]string{"--help"}); err != nil {
		t.Fatalf("--help: %v", err)
	}
}
