package experience

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/triage-agent/triage/policy"
)

// On disk a segment is a sequence of frames:
//
//	magic   uint32 LE  0x31455254 ("TRE1")
//	length  uint32 LE  length of body, at most MaxRecordBytes
//	crc     uint32 LE  CRC-32C (Castagnoli) of body
//	body    length bytes: the encoded Record (recordVersion first)
//
// The magic lets a reader that skips a corrupted frame find the next one
// without trusting the corrupted length; the CRC makes a torn or flipped
// body detectable.
const (
	frameMagic      = 0x31455254
	frameHeaderSize = 12
	// recordVersion 3 holds triage.state.v3 vectors (21 features); 2 held
	// v2's 20, 1 v1's 12. A reader refuses another version by name rather
	// than read one schema's floats as another's.
	recordVersion = 3
	// MaxRecordBytes bounds one encoded record, so that a corrupted length
	// can never make a reader allocate more than this.
	MaxRecordBytes = 64 << 10
	// MaxStringBytes bounds each string field of a Record.
	MaxStringBytes = 1024
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sentinel errors.
var (
	// ErrCorrupt reports a frame in the middle of the log whose checksum,
	// magic, length or body is wrong.
	ErrCorrupt = errors.New("experience: corrupt record")
	// ErrRecordInvalid reports a Record that cannot be logged (a string too
	// long, an action out of range).
	ErrRecordInvalid = errors.New("experience: invalid record")
	// ErrClosed reports an Append on a closed Writer.
	ErrClosed = errors.New("experience: writer closed")
)

func validate(r *Record) error {
	for _, f := range [...]struct {
		name, v string
	}{{"task id", r.TaskID}, {"class", r.Class}, {"phase", r.Phase}, {"model", r.Model}} {
		if len(f.v) > MaxStringBytes {
			return fmt.Errorf("%w: %s is %d bytes, at most %d", ErrRecordInvalid, f.name, len(f.v), MaxStringBytes)
		}
	}
	if int(r.Action) >= policy.NumActions {
		return fmt.Errorf("%w: action %d, want 0..%d", ErrRecordInvalid, r.Action, policy.NumActions-1)
	}
	return nil
}

// appendFrame appends r's frame to buf.
func appendFrame(buf []byte, r *Record) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, frameHeaderSize)...)
	buf = appendBody(buf, r)
	body := buf[start+frameHeaderSize:]
	binary.LittleEndian.PutUint32(buf[start:], frameMagic)
	binary.LittleEndian.PutUint32(buf[start+4:], uint32(len(body)))
	binary.LittleEndian.PutUint32(buf[start+8:], crc32.Checksum(body, castagnoli))
	return buf
}

func appendBody(b []byte, r *Record) []byte {
	b = append(b, recordVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.UnixNano))
	b = appendString(b, r.TaskID)
	b = appendString(b, r.Class)
	b = appendFloats(b, r.State[:])
	b = append(b, r.Action)
	b = appendFloats(b, r.Q[:])
	b = appendFloats(b, []float32{r.Reward})
	b = appendString(b, r.Phase)
	b = appendFloats(b, []float32{r.LatencyMs})
	var flags byte
	if r.SLAMet {
		flags |= 1
	}
	if r.TimedOut {
		flags |= 2
	}
	b = append(b, flags)
	b = appendString(b, r.Model)
	b = appendFloats(b, r.Next[:])
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendFloats(b []byte, fs []float32) []byte {
	for _, f := range fs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// decoder reads a body; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or bad %s", ErrCorrupt, what)
	}
}

func (d *decoder) byte1(what string) byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail(what)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) u64(what string) uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.fail(what)
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) floats(dst []float32, what string) {
	if d.err != nil || len(d.b) < 4*len(dst) {
		d.fail(what)
		return
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(d.b[4*i:]))
	}
	d.b = d.b[4*len(dst):]
}

func (d *decoder) str(what string) string {
	if d.err != nil {
		return ""
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > MaxStringBytes || uint64(len(d.b)-k) < n {
		d.fail(what)
		return ""
	}
	s := string(d.b[k : k+int(n)])
	d.b = d.b[k+int(n):]
	return s
}

func decodeBody(body []byte) (Record, error) {
	var r Record
	d := decoder{b: body}
	if v := d.byte1("version"); d.err == nil && v != recordVersion {
		if v >= 1 && v < recordVersion {
			return r, fmt.Errorf("%w: record version %d holds triage.state.v%d states; this build reads version %d (%s): read or fine-tune that log with the build that wrote it", ErrCorrupt, v, v, recordVersion, policy.StateSchema)
		}
		return r, fmt.Errorf("%w: record version %d, this build reads %d", ErrCorrupt, v, recordVersion)
	}
	r.UnixNano = int64(d.u64("time"))
	r.TaskID = d.str("task id")
	r.Class = d.str("class")
	d.floats(r.State[:], "state")
	r.Action = d.byte1("action")
	d.floats(r.Q[:], "q")
	var one [1]float32
	d.floats(one[:], "reward")
	r.Reward = one[0]
	r.Phase = d.str("phase")
	d.floats(one[:], "latency")
	r.LatencyMs = one[0]
	flags := d.byte1("flags")
	r.SLAMet = flags&1 != 0
	r.TimedOut = flags&2 != 0
	r.Model = d.str("model")
	d.floats(r.Next[:], "next state")
	if d.err != nil {
		return r, d.err
	}
	if len(d.b) != 0 {
		return r, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(d.b))
	}
	if int(r.Action) >= policy.NumActions {
		return r, fmt.Errorf("%w: action %d", ErrCorrupt, r.Action)
	}
	return r, nil
}

// frameStatus classifies the bytes at the start of b.
type frameStatus int

const (
	frameOK   frameStatus = iota
	frameTorn             // b ends before the frame does: a write cut short
	frameBad              // magic, length or checksum wrong
)

// parseFrame looks at the frame at the start of b and returns its body and
// total size when it is whole and its checksum matches.
func parseFrame(b []byte) (body []byte, size int, st frameStatus) {
	if len(b) < frameHeaderSize {
		if isMagicPrefix(b) {
			return nil, 0, frameTorn
		}
		return nil, 0, frameBad
	}
	if binary.LittleEndian.Uint32(b) != frameMagic {
		return nil, 0, frameBad
	}
	n := binary.LittleEndian.Uint32(b[4:])
	if n > MaxRecordBytes {
		return nil, 0, frameBad
	}
	if uint64(len(b)) < uint64(frameHeaderSize)+uint64(n) {
		return nil, 0, frameTorn
	}
	body = b[frameHeaderSize : frameHeaderSize+int(n)]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return nil, 0, frameBad
	}
	return body, frameHeaderSize + int(n), frameOK
}

func isMagicPrefix(b []byte) bool {
	var m [4]byte
	binary.LittleEndian.PutUint32(m[:], frameMagic)
	for i := 0; i < len(b) && i < 4; i++ {
		if b[i] != m[i] {
			return false
		}
	}
	return true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
