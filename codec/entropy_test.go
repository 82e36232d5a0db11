package codec

import (
	"bytes"
	"testing"
)

// Frames without literal entropy coding decode with any decoder to the
// same payloads; on text, whose literals Huffman coding shrinks, they are
// larger, which shows the option is in force.
func TestWithoutLiteralEntropy(t *testing.T) {
	payloads := counterSnapshots(11, 3, 200)
	sizes := map[bool]int{}
	for _, raw := range []bool{false, true} {
		opts := []Option{WithKeyframeInterval(1)}
		if raw {
			opts = append(opts, WithoutLiteralEntropy())
		}
		enc, err := NewEncoder(opts...)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := NewDecoder()
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range payloads {
			frame, err := enc.EncodeAll(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := dec.DecodeAll(frame, nil)
			if err != nil || !bytes.Equal(got, p) {
				t.Fatalf("raw literals %v, payload %d: %v", raw, i, err)
			}
			sizes[raw] += len(frame)
		}
	}
	if sizes[true] <= sizes[false] {
		t.Fatalf("frames %d bytes without literal entropy coding, %d with: the option had no effect", sizes[true], sizes[false])
	}
	t.Logf("%d bytes with literal entropy coding, %d without", sizes[false], sizes[true])
}
