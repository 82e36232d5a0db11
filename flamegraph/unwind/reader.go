package unwind

import (
	"encoding/binary"
	"errors"
)

// errTruncated means a structure runs past the end of its section.
var errTruncated = errors.New("truncated")

// reader reads little-endian DWARF encodings from a byte slice. The first
// error sticks: later reads return zero, so a parser checks err once per
// structure instead of after every field.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.off = len(r.b)
}

func (r *reader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail(errTruncated)
		return false
	}
	return true
}

// zeros stands in for the bytes of a read past the end, so that it
// decodes as 0.
var zeros [8]byte

// take returns the next n bytes (n at most 8) and moves past them; past the
// end it fails the reader and returns n zero bytes.
func (r *reader) take(n int) []byte {
	if !r.need(n) {
		return zeros[:n]
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) u8() uint8   { return r.take(1)[0] }
func (r *reader) u16() uint16 { return binary.LittleEndian.Uint16(r.take(2)) }
func (r *reader) u32() uint32 { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *reader) u64() uint64 { return binary.LittleEndian.Uint64(r.take(8)) }

// uleb reads an unsigned LEB128 number; bits past 64 are an error, not a
// silent wrap.
func (r *reader) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if !r.need(1) {
			return 0
		}
		c := r.b[r.off]
		r.off++
		if shift >= 64 || (shift == 63 && c&0x7e != 0) {
			r.fail(errors.New("LEB128 number over 64 bits"))
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	var shift uint
	for {
		if !r.need(1) {
			return 0
		}
		c := r.b[r.off]
		r.off++
		if shift >= 64 {
			r.fail(errors.New("LEB128 number over 64 bits"))
			return 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

// cstring reads a NUL-terminated string.
func (r *reader) cstring() string {
	if r.err != nil {
		return ""
	}
	for i := r.off; i < len(r.b); i++ {
		if r.b[i] == 0 {
			s := string(r.b[r.off:i])
			r.off = i + 1
			return s
		}
	}
	r.fail(errTruncated)
	return ""
}

func (r *reader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) || !r.need(int(n)) {
		r.fail(errTruncated)
		return nil
	}
	v := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return v
}
