package codec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The frame-stream file of DESIGN.md: a sequence of records, each an unsigned
// LEB128 length followed by that many payload bytes, one per snapshot, in
// order. It is how snapshot streams are stored for `triage bench codec`.

// AppendRecord appends payload as one frame-stream record to dst.
func AppendRecord(dst, payload []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(payload)))
	return append(dst, payload...)
}

// RecordReader reads frame-stream records, refusing any longer than its
// limit before allocating for it.
type RecordReader struct {
	r     *bufio.Reader
	max   int
	buf   []byte
	count int
}

// NewRecordReader reads records of at most maxRecord bytes from r.
func NewRecordReader(r io.Reader, maxRecord int) *RecordReader {
	return &RecordReader{r: bufio.NewReader(r), max: maxRecord}
}

// Next returns the next record, valid until the following call, or io.EOF
// after the last one. A damaged stream gives ErrMalformed (wrapping
// io.ErrUnexpectedEOF when cut short) or ErrTooLarge.
func (rr *RecordReader) Next() ([]byte, error) {
	n, err := binary.ReadUvarint(rr.r)
	switch {
	case errors.Is(err, io.EOF):
		return nil, io.EOF // clean end: nothing of a next record was read
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%w: record %d: length cut short: %w", ErrMalformed, rr.count, io.ErrUnexpectedEOF)
	case err != nil:
		return nil, fmt.Errorf("%w: record %d: length: %v", ErrMalformed, rr.count, err)
	case n > uint64(rr.max):
		return nil, fmt.Errorf("%w: record %d: length %d, limit %d", ErrTooLarge, rr.count, n, rr.max)
	}
	if cap(rr.buf) < int(n) {
		rr.buf = make([]byte, n)
	}
	rr.buf = rr.buf[:n]
	if got, err := io.ReadFull(rr.r, rr.buf); err != nil {
		return nil, fmt.Errorf("%w: record %d: %d of %d bytes: %w", ErrMalformed, rr.count, got, n, io.ErrUnexpectedEOF)
	}
	rr.count++
	return rr.buf, nil
}

// ReadRecords reads every record of r into fresh slices; it stops at the
// first damaged record and returns the error with the records before it.
func ReadRecords(r io.Reader, maxRecord int) ([][]byte, error) {
	rr := NewRecordReader(r, maxRecord)
	var out [][]byte
	for {
		rec, err := rr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, append([]byte(nil), rec...))
	}
}
