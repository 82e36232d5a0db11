package experience

import (
	"errors"
	"strings"
	"testing"
)

// A record written by an earlier build (record version 1: v1's 12-feature
// states; 2: v2's 20) is refused by name, not read as v3 floats.
func TestV1RecordRefusedByName(t *testing.T) {
	r := sampleRecord(1)
	body := appendBody(nil, &r)
	if _, err := decodeBody(body); err != nil {
		t.Fatalf("a v3 record: %v", err)
	}
	for v, schema := range map[byte]string{1: "triage.state.v1", 2: "triage.state.v2"} {
		body[0] = v
		_, err := decodeBody(body)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), schema) {
			t.Fatalf("a version-%d record: %v", v, err)
		}
	}
	body[0] = 9
	if _, err := decodeBody(body); !errors.Is(err, ErrCorrupt) || strings.Contains(err.Error(), "holds") {
		t.Fatalf("a version-9 record: %v, want ErrCorrupt naming no schema", err)
	}
}
