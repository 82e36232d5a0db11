package experience

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// segmentExt names the files of a log directory: <sequence>.exp, read and
// rotated in sequence order.
const segmentExt = ".exp"

func segmentName(seq uint64) string { return fmt.Sprintf("%016d%s", seq, segmentExt) }

type segment struct {
	seq  uint64
	path string
	size int64
}

// listSegments returns the directory's segments in sequence order; other
// files are ignored so that an operator's notes or a lost+found do not break reading.
func listSegments(dir string) ([]segment, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing experience segments: %w", err)
	}
	var segs []segment
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, segmentExt) {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(name, segmentExt), 10, 64)
		if err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", name, err)
		}
		segs = append(segs, segment{seq: seq, path: filepath.Join(dir, name), size: info.Size()})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].seq < segs[j].seq })
	return segs, nil
}

// ReadOptions tunes ReadDirWith.
type ReadOptions struct {
	// SkipCorrupt skips a corrupted frame in the middle of the log, resyncs
	// on the next frame whose magic and checksum are good, and counts it,
	// instead of stopping with ErrCorrupt.
	SkipCorrupt bool
}

// ReadStats says what a read found.
type ReadStats struct {
	Segments int
	Records  int
	// TornTail is set when the last segment ends in a partial frame (or in
	// zeros): the expected result of a crash mid-write. It is not an error.
	TornTail bool
	// Corrupt counts corrupted regions skipped (SkipCorrupt only), and
	// SkippedBytes their total size.
	Corrupt      int
	SkippedBytes int64
}

// ReadDir calls fn for every record of the log in dir, oldest first. A torn
// last record (a crash mid-append) ends the read cleanly; a corrupted record
// anywhere else is an error wrapping ErrCorrupt that names the segment and
// offset. An error from fn stops the read and is returned.
func ReadDir(dir string, fn func(Record) error) error {
	_, err := ReadDirWith(dir, ReadOptions{}, fn)
	return err
}

// ReadDirWith is ReadDir with options, and reports what it found.
func ReadDirWith(dir string, opts ReadOptions, fn func(Record) error) (ReadStats, error) {
	var st ReadStats
	segs, err := listSegments(dir)
	if err != nil {
		return st, err
	}
	for i, s := range segs {
		st.Segments++
		ss, err := scanSegment(s.path, opts.SkipCorrupt, fn)
		st.Records += ss.records
		st.Corrupt += ss.corrupt
		st.SkippedBytes += ss.skipped
		if err != nil {
			return st, err
		}
		if ss.torn {
			if i == len(segs)-1 {
				st.TornTail = true
				continue
			}
			// A torn frame before the last segment is not a crash tail the
			// writer would have repaired: it is damage.
			if !opts.SkipCorrupt {
				return st, fmt.Errorf("%w: %s is cut short at offset %d but is not the last segment", ErrCorrupt, s.path, ss.validEnd)
			}
			st.Corrupt++
			st.SkippedBytes += s.size - ss.validEnd
		}
	}
	return st, nil
}

type segStats struct {
	records  int
	corrupt  int
	skipped  int64
	torn     bool  // ends in a partial frame or zeros
	validEnd int64 // offset just past the last good frame
	badAt    int64 // offset of the first corrupted frame, -1 if none
}

// scanSegment reads the frames of one segment. It streams through a buffer
// of one maximal frame, so memory stays bounded whatever the file holds.
func scanSegment(path string, skipCorrupt bool, fn func(Record) error) (segStats, error) {
	st := segStats{badAt: -1}
	f, err := os.Open(path)
	if err != nil {
		return st, fmt.Errorf("opening experience segment: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, frameHeaderSize+MaxRecordBytes)
	var off int64
	inBad := false // inside a corrupted region being skipped
	for {
		hdr, _ := br.Peek(frameHeaderSize)
		if len(hdr) == 0 {
			return st, nil
		}
		var body []byte
		var size int
		var status frameStatus
		switch {
		case len(hdr) < frameHeaderSize:
			_, _, status = parseFrame(hdr)
		case uint32le(hdr) != frameMagic || uint32le(hdr[4:]) > MaxRecordBytes:
			// Checked before peeking the body: while skipping a damaged
			// region this runs at every byte, and a large Peek slides the
			// buffer each time.
			status = frameBad
		default:
			full, _ := br.Peek(frameHeaderSize + int(uint32le(hdr[4:])))
			body, size, status = parseFrame(full)
		}
		switch status {
		case frameOK:
			r, derr := decodeBody(body)
			if derr != nil {
				status = frameBad
				break
			}
			inBad = false
			if fn != nil {
				if err := fn(r); err != nil {
					return st, err
				}
			}
			st.records++
			off += int64(size)
			st.validEnd = off
			_, _ = br.Discard(size)
			continue
		case frameTorn:
			// Peek returns a short frame only at EOF: the frame runs past
			// the end of the file, which is what a write cut short leaves.
			if !inBad {
				st.torn = true
				return st, nil
			}
			status = frameBad
		}
		if !inBad {
			if rest := peekAll(br); allZero(rest) && len(rest) < frameHeaderSize+MaxRecordBytes {
				// Zeros to the end: a filesystem that extended the file
				// before the data landed (power loss). Same as a torn tail.
				st.torn = true
				return st, nil
			}
		}
		if st.badAt < 0 {
			st.badAt = off
		}
		if !skipCorrupt {
			return st, fmt.Errorf("%w: %s at offset %d", ErrCorrupt, path, off)
		}
		if !inBad {
			st.corrupt++
			inBad = true
		}
		// Resync one byte at a time: the next good frame starts with the
		// magic and carries a matching checksum.
		_, _ = br.Discard(1)
		off++
		st.skipped++
	}
}

func uint32le(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func peekAll(br *bufio.Reader) []byte {
	b, _ := br.Peek(frameHeaderSize + MaxRecordBytes)
	return b
}
