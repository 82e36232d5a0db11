package wire

import (
	"bytes"
	"testing"

	"github.com/triage-agent/triage/codec"
)

// LastFrame tells a reader what each message cost: a snapshot stream's first
// frame is full, the next one, of a table that changed one level, a delta
// that is smaller.
func TestLastFrameSizeAndKind(t *testing.T) {
	var buf bytes.Buffer
	fw, err := NewFrameWriter(&buf, SnapshotOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	a, b := validTable(), validTable()
	b.Classes[0].Levels[4] = 3
	for _, tb := range []*DecisionTable{a, b} {
		if err := fw.Write(&Envelope{Body: &Envelope_DecisionTable{DecisionTable: tb}}); err != nil {
			t.Fatal(err)
		}
	}
	fr, err := NewFrameReader(&buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, k := fr.LastFrame(); n != 0 || k != 0 {
		t.Fatalf("before any read: %d bytes, kind %v", n, k)
	}
	var env Envelope
	var sizes []int
	for _, want := range []codec.Kind{codec.KindFull, codec.KindDelta} {
		if err := fr.Read(&env); err != nil {
			t.Fatal(err)
		}
		n, k := fr.LastFrame()
		if k != want || n <= 0 {
			t.Fatalf("frame of %d bytes, kind %v, want %v", n, k, want)
		}
		sizes = append(sizes, n)
	}
	if sizes[1] >= sizes[0] {
		t.Fatalf("delta of %d bytes, full %d", sizes[1], sizes[0])
	}
}
