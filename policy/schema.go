package policy

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSchemaMismatch reports a model built for another state vector. The
// agent refuses such a model and keeps the one it has.
var ErrSchemaMismatch = errors.New("policy: model schema differs from this build's")

// CheckSchema returns nil when meta describes this build's state vector
// (StateSchema and FeatureNames, in order) and otherwise an error wrapping
// ErrSchemaMismatch that lists every difference: the schema name, the
// feature count, and each feature that differs at its index.
func CheckSchema(meta Metadata) error {
	var diffs []string
	if meta.Schema != StateSchema {
		diffs = append(diffs, fmt.Sprintf("schema is %q, want %q", meta.Schema, StateSchema))
	}
	if len(meta.Features) != NumFeatures {
		diffs = append(diffs, fmt.Sprintf("%d features, want %d", len(meta.Features), NumFeatures))
	}
	for i := 0; i < min(len(meta.Features), NumFeatures); i++ {
		if meta.Features[i] != FeatureNames[i] {
			diffs = append(diffs, fmt.Sprintf("feature %d is %q, want %q", i, meta.Features[i], FeatureNames[i]))
		}
	}
	for i := NumFeatures; i < len(meta.Features); i++ {
		diffs = append(diffs, fmt.Sprintf("extra feature %d %q", i, meta.Features[i]))
	}
	for i := len(meta.Features); i < NumFeatures; i++ {
		diffs = append(diffs, fmt.Sprintf("missing feature %d %q", i, FeatureNames[i]))
	}
	if len(diffs) == 0 {
		return nil
	}
	const maxShown = 8 // a wholly different model would otherwise print a wall of text
	if len(diffs) > maxShown {
		diffs = append(diffs[:maxShown], fmt.Sprintf("and %d more", len(diffs)-maxShown))
	}
	return fmt.Errorf("%w: %s", ErrSchemaMismatch, strings.Join(diffs, "; "))
}
