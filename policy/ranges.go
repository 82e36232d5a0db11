package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// RangeTolerance is how far (in the state's [0, 1] units) a feature may lie
// outside the range training covered before a decision is out of range:
// small enough that the network has truly not seen such a state, large
// enough that the rounding of a boundary value does not trip it. On the
// log-scaled millisecond features it is about a factor 1.3.
const RangeTolerance = 0.02

// FeatureRanges is the range of every feature over the states a model was
// trained on: a model carries it in its metadata (MetaFeatureRanges) and
// its deciders mark a state outside it (Decision.OutOfRange), where the
// network's answer is an extrapolation that the guard does not trust.
//
// A trainer makes one with Observe over every state it trains on and sets
// Metadata.Ranges to it before writing the model.
type FeatureRanges struct {
	Lo, Hi State
	seen   bool
}

// Observe widens the ranges to include s.
func (r *FeatureRanges) Observe(s State) {
	if !r.seen {
		r.Lo, r.Hi, r.seen = s, s, true
		return
	}
	for i, x := range s {
		r.Lo[i] = min(r.Lo[i], x)
		r.Hi[i] = max(r.Hi[i], x)
	}
}

// Empty reports whether no state was observed.
func (r *FeatureRanges) Empty() bool { return !r.seen }

// Outside returns the first feature of s that lies outside the ranges by
// more than RangeTolerance, or -1. Empty ranges (or nil) know nothing, and
// every state is inside them.
func (r *FeatureRanges) Outside(s *State) int {
	if r == nil || !r.seen {
		return -1
	}
	for i, x := range s {
		if x < r.Lo[i]-RangeTolerance || x > r.Hi[i]+RangeTolerance {
			return i
		}
	}
	return -1
}

// Encode is the metadata value: NumFeatures "lo:hi" pairs, comma-separated,
// in FeatureNames order (which the schema check pins), each float written
// so that it parses back to the same float32.
func (r *FeatureRanges) Encode() string {
	var b strings.Builder
	for i := range r.Lo {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(r.Lo[i]), 'g', -1, 32))
		b.WriteByte(':')
		b.WriteString(strconv.FormatFloat(float64(r.Hi[i]), 'g', -1, 32))
	}
	return b.String()
}

// ParseFeatureRanges reads what Encode writes. Anything else (another
// count, a bound outside [0, 1], lo above hi) is an error wrapping
// ErrBadMetadata.
func ParseFeatureRanges(v string) (*FeatureRanges, error) {
	// Counted before splitting: a hostile value of a million commas must
	// not become a million strings.
	if n := strings.Count(v, ",") + 1; n != NumFeatures {
		return nil, fmt.Errorf("%w: %s has %d ranges, want %d", ErrBadMetadata, MetaFeatureRanges, n, NumFeatures)
	}
	pairs := strings.Split(v, ",")
	r := &FeatureRanges{seen: true}
	for i, p := range pairs {
		lo, hi, ok := strings.Cut(p, ":")
		l, errL := strconv.ParseFloat(lo, 32)
		h, errH := strconv.ParseFloat(hi, 32)
		if !ok || errL != nil || errH != nil || !(l >= 0 && l <= h && h <= 1) || math.IsNaN(h) {
			return nil, fmt.Errorf("%w: %s: feature %d (%s) has range %q, want lo:hi with 0 ≤ lo ≤ hi ≤ 1", ErrBadMetadata, MetaFeatureRanges, i, FeatureNames[i], p)
		}
		r.Lo[i], r.Hi[i] = float32(l), float32(h)
	}
	return r, nil
}
