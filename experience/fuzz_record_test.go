package experience

import (
	"bytes"
	"errors"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// An experience record's body, as a reader meets it after the frame's
// checksum passed: any bytes decode to a valid record or to ErrCorrupt,
// never panic, and a record that decodes encodes to a body that decodes
// to the same record (what `triage train --experience` reads is what the
// agent wrote).
func FuzzRecordBody(f *testing.F) {
	for i := range 3 {
		r := sampleRecord(i)
		f.Add(appendBody(nil, &r))
	}
	long := sampleRecord(7)
	long.TaskID, long.Model = string(make([]byte, MaxStringBytes)), "m"
	f.Add(appendBody(nil, &long))
	f.Add([]byte{recordVersion})
	f.Add([]byte{2, 0, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeBody(body)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if int(r.Action) >= policy.NumActions {
			t.Fatalf("decoded action %d", r.Action)
		}
		if err := validate(&r); err != nil {
			t.Fatalf("decoded a record Append refuses: %v", err)
		}
		enc := appendBody(nil, &r)
		again, err := decodeBody(enc)
		if err != nil {
			t.Fatalf("re-encoding a decoded record: %v", err)
		}
		// Compared encoded, bit for bit: a NaN the body carried stays that NaN.
		if !bytes.Equal(appendBody(nil, &again), enc) {
			t.Fatalf("round trip changed the record:\n%+v\n%+v", r, again)
		}
	})
}
