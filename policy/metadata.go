package policy

// Metadata is what a triage model says about itself, stored as ONNX
// metadata_props. Schema and Features are checked on load against
// StateSchema and FeatureNames; a model that differs is refused.
type Metadata struct {
	Schema      string   // "triage.state.v1"
	Features    []string // ordered feature names, as FeatureNames
	Version     string   // model version, shown in answers and /metrics
	Description string   // free text: how it was trained
	// Ranges is the range of every feature over the training states
	// (MetaFeatureRanges); nil when the model does not say, and then no
	// state is out of range.
	Ranges *FeatureRanges
	// Extra carries anything else (trainer, seed, scenarios, git revision).
	Extra map[string]string
}

// CurrentMetadata returns metadata for a model of this build's schema.
func CurrentMetadata(version, description string) Metadata {
	return Metadata{
		Schema:      StateSchema,
		Features:    append([]string(nil), FeatureNames[:]...),
		Version:     version,
		Description: description,
	}
}
