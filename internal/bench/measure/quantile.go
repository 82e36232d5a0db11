// Package measure turns benchmark runs into figures: the one quantile
// definition and the machine's CPU model. Every harness under
// internal/bench uses it, so two benchmarks never mean different things by
// the same word. (A process's CPU time and memory are read by
// internal/bench/proc, which tests use too.)
package measure

import (
	"slices"

	"github.com/triage-agent/triage/policy"
)

// Quantile is the nearest-rank q-quantile of sorted (the zero value when
// empty): policy.NearestRankIndex, the definition the agent's class windows
// and the simulator use, so that `bench decide`, `bench e2e` and the agent
// mean the same by p99.
func Quantile[T any](sorted []T, q float64) T {
	if len(sorted) == 0 {
		var zero T
		return zero
	}
	return sorted[policy.NearestRankIndex(len(sorted), q)]
}

// Median is the nearest-rank median of xs, in any order (xs is not
// modified): the middle element for an odd count, the lower middle one for
// an even count.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return Quantile(s, 0.5)
}
