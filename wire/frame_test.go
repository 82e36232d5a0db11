package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/triage-agent/triage/codec"
)

func decideEnv(n int) *Envelope {
	ts := make([]*Task, n)
	for i := range ts {
		ts[i] = &Task{Id: uint64(i + 1), Class: "interactive", SlaMs: 20, CostMs: 2, Tenant: "t"}
	}
	return &Envelope{Body: &Envelope_DecideRequest{DecideRequest: &DecideRequest{ReqId: 9, Tasks: ts}}}
}

func TestFrameRoundTripStreamOfMessages(t *testing.T) {
	for _, opts := range [][]codec.Option{nil, CallOptions(), SnapshotOptions()} {
		var buf bytes.Buffer
		fw, err := NewFrameWriter(&buf, opts...)
		if err != nil {
			t.Fatal(err)
		}
		msgs := []*Envelope{decideEnv(1), decideEnv(64), decideEnv(64), {Body: &Envelope_Ack{Ack: &Ack{Hash: 42}}}}
		for _, m := range msgs {
			if err := fw.Write(m); err != nil {
				t.Fatal(err)
			}
		}
		fr, err := NewFrameReader(&buf, 0)
		if err != nil {
			t.Fatal(err)
		}
		wantFrames(t, fr, msgs)
		var end Envelope
		if err := fr.Read(&end); !errors.Is(err, io.EOF) {
			t.Fatalf("after the last message: %v, want io.EOF", err)
		}
	}
}

func TestFrameReaderErrors(t *testing.T) {
	var good bytes.Buffer
	fw, _ := NewFrameWriter(&good)
	fw.Write(decideEnv(2))
	frame := good.Bytes()
	cases := []struct {
		name string
		in   []byte
		want error
		code Code
	}{
		{"truncated prefix", []byte{0x80}, ErrMalformed, CodeMalformed},
		{"zero length", []byte{0}, ErrFrameTooLarge, CodeFrameTooLarge},
		{"length past limit", binary.AppendUvarint(nil, 10<<20), ErrFrameTooLarge, CodeFrameTooLarge},
		{"lying length", append([]byte{200}, frame[1:]...), ErrMalformed, CodeMalformed},
		{"garbage frame", append([]byte{5}, "hello"...), codec.ErrMalformed, CodeMalformed},
		{"wrong checksum", func() []byte { b := bytes.Clone(frame); b[1+9] ^= 1; return b }(), codec.ErrChecksum, CodeChecksum},
	}
	for _, tc := range cases {
		fr, _ := NewFrameReader(bytes.NewReader(tc.in), 64<<10)
		var m Envelope
		err := fr.Read(&m)
		if !errors.Is(err, tc.want) || CodeOf(err) != tc.code {
			t.Errorf("%s: err %v (code %v), want %v (%v)", tc.name, err, CodeOf(err), tc.want, tc.code)
		}
	}
}

func TestEmptyEnvelopeIsMalformed(t *testing.T) {
	var buf bytes.Buffer
	fw, _ := NewFrameWriter(&buf)
	if err := fw.Write(&Envelope{}); err != nil {
		t.Fatal(err)
	}
	fr, _ := NewFrameReader(&buf, 0)
	var m Envelope
	if err := fr.Read(&m); !errors.Is(err, ErrMalformed) {
		t.Fatalf("empty envelope: %v", err)
	}
}

func TestCodeNames(t *testing.T) {
	if CodeUnknownBase.String() != "unknown base" || Code(0x999).String() != "code 0x999" {
		t.Fatalf("names: %q %q", CodeUnknownBase, Code(0x999))
	}
}
