package flamegraph

import (
	"fmt"
	"io"

	"github.com/google/pprof/profile"
)

// Suffixes of the files written for one profile.
const (
	SuffixPprof  = ".pb.gz"
	SuffixFolded = ".folded"
	SuffixSVG    = ".svg"
)

// WriteFiles writes PREFIX.pb.gz, PREFIX.folded and PREFIX.svg for p (the
// folded and SVG files show sampleType, "" for the profile's default), and
// returns the paths written.
func WriteFiles(prefix string, p *profile.Profile, opts SVGOptions) ([]string, error) {
	paths := []string{prefix + SuffixPprof, prefix + SuffixFolded, prefix + SuffixSVG}
	if err := WriteProfile(paths[0], p); err != nil {
		return nil, err
	}
	foldedType := foldedSampleType(p, opts.SampleType)
	if err := writeFileAtomic(paths[1], func(w io.Writer) error { return WriteFolded(w, p, foldedType) }); err != nil {
		return nil, fmt.Errorf("folded: %w", err)
	}
	if err := writeFileAtomic(paths[2], func(w io.Writer) error { return WriteSVG(w, p, opts) }); err != nil {
		return nil, fmt.Errorf("svg: %w", err)
	}
	return paths, nil
}

// WriteDiffFile writes the differential SVG of b against a to path.
func WriteDiffFile(path string, a, b *profile.Profile, opts SVGOptions) error {
	return writeFileAtomic(path, func(w io.Writer) error { return WriteDiffSVG(w, a, b, opts) })
}

// WriteDiffFoldedFile writes WriteDiffFolded's output to path.
func WriteDiffFoldedFile(path string, a, b *profile.Profile, sampleType string) error {
	st := foldedSampleType(a, sampleType)
	return writeFileAtomic(path, func(w io.Writer) error { return WriteDiffFolded(w, a, b, st) })
}

// foldedSampleType picks what folded files count when the caller did not
// say: samples where the profile has them (what stackcollapse-perf writes,
// and what FlameGraph users expect), else the default type. The SVG keeps
// the default type, which is in time units.
func foldedSampleType(p *profile.Profile, sampleType string) string {
	if sampleType != "" {
		return sampleType
	}
	if _, err := SampleIndex(p, TypeSamples); err == nil {
		return TypeSamples
	}
	return ""
}
