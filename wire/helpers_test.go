package wire

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// wantFrames reads one frame from fr for each of msgs and wants it to
// decode to that message.
func wantFrames(t *testing.T, fr *FrameReader, msgs []*Envelope) {
	t.Helper()
	for i, want := range msgs {
		var got Envelope
		if err := fr.Read(&got); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !proto.Equal(&got, want) {
			t.Fatalf("message %d: got %v want %v", i, &got, want)
		}
	}
}
