package experience

import (
	"errors"
	"strings"
	"testing"
)

// A record written by a state-v1 build (record version 1: 12-feature
// states) is refused by name, not read as v2 floats.
func TestV1RecordRefusedByName(t *testing.T) {
	r := sampleRecord(1)
	body := appendBody(nil, &r)
	if _, err := decodeBody(body); err != nil {
		t.Fatalf("a v2 record: %v", err)
	}
	body[0] = 1
	_, err := decodeBody(body)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "triage.state.v1") {
		t.Fatalf("a version-1 record: %v", err)
	}
}
