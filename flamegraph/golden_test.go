package flamegraph

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/flamegraph/golden")

const goldenDir = "../testdata/flamegraph/golden"

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the golden file (run go test ./flamegraph -update after checking the change)\n--- got (first 2000 bytes)\n%s", name, got[:min(2000, len(got))])
	}
}

func TestFoldedGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteFolded(&b, syntheticProfile(1), ""); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "synthetic.folded", b.Bytes())
}

func TestSVGGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSVG(&b, syntheticProfile(1), SVGOptions{Title: "synthetic"}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "synthetic.svg", b.Bytes())
}

func TestDiffSVGGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteDiffSVG(&b, syntheticProfile(1), syntheticProfile(3), SVGOptions{Title: "synthetic diff"}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "synthetic_diff.svg", b.Bytes())
}

func TestDiffFoldedGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteDiffFolded(&b, syntheticProfile(1), syntheticProfile(3), TypeSamples); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "synthetic_diff.folded", b.Bytes())
}
