//go:build race

package codec

// raceEnabled: the race detector adds allocations of its own, so the
// allocation tests cannot count under it.
const raceEnabled = true
