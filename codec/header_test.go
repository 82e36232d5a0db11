package codec

import (
	"encoding/binary"
	"io"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{Kind: KindFull, Hash: 1, Length: 0, BodyLen: 0},
		{Kind: KindFull, Hash: 0xdeadbeef, Length: 127, BodyLen: 100},
		{Kind: KindDelta, Base: 0x0123456789abcdef, Hash: 42, Length: 128, BodyLen: 5},
		{Kind: KindDelta, Base: 7, Hash: ^uint64(0), Length: MaxSizeLimit, BodyLen: 1 << 20},
	} {
		b := appendHeader(nil, h)
		got, err := ParseHeader(append(b, make([]byte, h.BodyLen)...))
		if err != nil {
			t.Fatalf("ParseHeader(%+v): %v", h, err)
		}
		h.HeaderLen = len(b)
		if got != h {
			t.Errorf("ParseHeader = %+v, want %+v", got, h)
		}
		if got.HeaderLen < MinHeaderLen || got.HeaderLen > MaxHeaderLen {
			t.Errorf("header of %d bytes outside [%d, %d]", got.HeaderLen, MinHeaderLen, MaxHeaderLen)
		}
		// The header alone is enough to learn the frame's length.
		if g, err := ParseHeader(b); err != nil || g.FrameLen() != len(b)+h.BodyLen {
			t.Errorf("ParseHeader(header only) = %+v, %v", g, err)
		}
	}
}

func TestParseHeaderErrors(t *testing.T) {
	valid := appendHeader(nil, Header{Kind: KindDelta, Base: 9, Hash: 3, Length: 300, BodyLen: 20})
	fixed := valid[:fixedHeaderLen]
	tests := []struct {
		name  string
		frame []byte
		short bool // wraps io.ErrUnexpectedEOF too
	}{
		{"empty", nil, true},
		{"cut in the hashes", valid[:10], true},
		{"no lengths", fixed, true},
		{"cut in the payload length", valid[:fixedHeaderLen+1], true},
		{"no body length", valid[:fixedHeaderLen+2], true},
		{"bad kind", append([]byte{'X'}, valid[1:]...), false},
		{"full frame with a base", appendHeader(nil, Header{Kind: KindFull, Base: 1, Length: 10, BodyLen: 10}), false},
		{"overlong uvarint", append(append([]byte{}, fixed...), 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0), false},
		{"uvarint overflow", append(append([]byte{}, fixed...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), false},
		{"length past the limit", binary.AppendUvarint(append([]byte{}, fixed...), 3*MaxSizeLimit), false},
		{"body longer than zstd can need", appendHeader(nil, Header{Kind: KindFull, Length: 10, BodyLen: 1000}), false},
		{"body for an empty payload", appendHeader(nil, Header{Kind: KindFull, Length: 0, BodyLen: 3}), false},
	}
	for _, tt := range tests {
		_, err := ParseHeader(tt.frame)
		if !errorsIs(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", tt.name, err)
		}
		if got := errorsIs(err, io.ErrUnexpectedEOF); got != tt.short {
			t.Errorf("%s: wraps io.ErrUnexpectedEOF = %v, want %v (err %v)", tt.name, got, tt.short, err)
		}
	}
}

func TestHashIsXXHash64(t *testing.T) {
	// Known xxhash64 values (seed 0), so that peers in other languages agree.
	for in, want := range map[string]uint64{"": 0xef46db3751d8e999, "abc": 0x44bc2cf5ad770999} {
		if got := Hash([]byte(in)); got != want {
			t.Errorf("Hash(%q) = %#x, want %#x", in, got, want)
		}
	}
}
