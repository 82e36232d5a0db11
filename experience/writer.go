package experience

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Options configures a Writer; the zero value means the defaults.
type Options struct {
	// SegmentBytes rotates to a new segment once the current one would grow
	// past it. Default 16 MiB.
	SegmentBytes int64
	// MaxTotalBytes caps the whole directory: on rotation the oldest
	// segments are removed until they and a full new segment fit. Default
	// 256 MiB.
	MaxTotalBytes int64
	// SyncInterval is how often written records are fsynced, in one batch.
	// Default 1 s. Every Append is one write(2), so a killed process loses
	// nothing it appended; the interval bounds what a power loss can take.
	SyncInterval time.Duration
	// SyncEachAppend fsyncs after every record instead (slow, for tests and
	// operators who want it).
	SyncEachAppend bool
	// Logger receives the repairs made on open. Default slog.Default().
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = 16 << 20
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = 256 << 20
	}
	if o.MaxTotalBytes < o.SegmentBytes {
		o.MaxTotalBytes = o.SegmentBytes
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Writer appends records to a log directory. It is safe for concurrent use.
type Writer struct {
	dir  string
	opts Options

	mu      sync.Mutex
	f       *os.File
	seq     uint64
	size    int64     // of the current segment
	older   []segment // closed segments, oldest first
	dirty   bool
	closed  bool
	buf     []byte
	stats   WriterStats
	stop    chan struct{}
	stopped chan struct{}
}

// WriterStats counts what a Writer did, for /metrics.
type WriterStats struct {
	Appended        uint64
	Bytes           uint64
	Syncs           uint64
	Rotations       uint64
	SegmentsRemoved uint64
	// TruncatedBytes is what Open cut from a torn last segment.
	TruncatedBytes int64
}

// Open opens (creating if needed) the log in dir for appending. A torn
// frame at the end of the last segment, left by a crash, is truncated away;
// a last segment corrupted before its end is left as it is for the reader
// to report, and appending continues in a new segment.
func Open(dir string, opts Options) (*Writer, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("creating experience dir: %w", err)
	}
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, opts: opts, stop: make(chan struct{}), stopped: make(chan struct{})}
	if n := len(segs); n > 0 {
		last := segs[n-1]
		st, err := scanSegment(last.path, false, nil)
		switch {
		case err == nil && !st.torn && last.size < opts.SegmentBytes:
			w.older = segs[:n-1]
			if err := w.openSegment(last.seq, last.size); err != nil {
				return nil, err
			}
		case err == nil && st.torn:
			if err := os.Truncate(last.path, st.validEnd); err != nil {
				return nil, fmt.Errorf("truncating torn experience segment: %w", err)
			}
			w.stats.TruncatedBytes = last.size - st.validEnd
			opts.Logger.Warn("experience log: truncated a torn last record", "segment", last.path, "bytes", w.stats.TruncatedBytes)
			w.older = segs[:n-1]
			if err := w.openSegment(last.seq, st.validEnd); err != nil {
				return nil, err
			}
		default:
			if err != nil {
				opts.Logger.Warn("experience log: last segment is corrupted; leaving it and starting a new one", "segment", last.path, "err", err)
			}
			w.older = segs
			if err := w.openSegment(last.seq+1, 0); err != nil {
				return nil, err
			}
		}
	} else if err := w.openSegment(1, 0); err != nil {
		return nil, err
	}
	// A cap lowered since the last run applies at once.
	if err := w.prune(); err != nil {
		w.f.Close()
		return nil, err
	}
	if !opts.SyncEachAppend {
		go w.syncLoop()
	} else {
		close(w.stopped)
	}
	return w, nil
}

func (w *Writer) openSegment(seq uint64, size int64) error {
	path := filepath.Join(w.dir, segmentName(seq))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("opening experience segment: %w", err)
	}
	w.f, w.seq, w.size = f, seq, size
	return syncDir(w.dir)
}

// Append writes one record as one write(2): after it returns, a killed
// process cannot lose it; only a power loss within SyncInterval can.
func (w *Writer) Append(r *Record) error {
	if err := validate(r); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.buf = appendFrame(w.buf[:0], r)
	return w.writeLocked(1)
}

// AppendAll writes records as one write(2), as Append writes one: after it
// returns, a killed process cannot lose any of them. A record that is not
// valid fails the call before anything is written.
func (w *Writer) AppendAll(rs []Record) error {
	for i := range rs {
		if err := validate(&rs[i]); err != nil {
			return err
		}
	}
	if len(rs) == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.buf = w.buf[:0]
	for i := range rs {
		w.buf = appendFrame(w.buf, &rs[i])
	}
	return w.writeLocked(len(rs))
}

// writeLocked writes the n records framed in w.buf to the current segment,
// rotating first when they would take it past its size.
func (w *Writer) writeLocked(n int) error {
	if w.f == nil || w.size > 0 && w.size+int64(len(w.buf)) > w.opts.SegmentBytes {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	written, err := w.f.Write(w.buf)
	if err != nil {
		w.dropPartial(written)
		return fmt.Errorf("appending experience record: %w", err)
	}
	w.size += int64(written)
	w.dirty = true
	w.stats.Appended += uint64(n)
	w.stats.Bytes += uint64(written)
	if w.opts.SyncEachAppend {
		return w.syncLocked()
	}
	return nil
}

// dropPartial undoes a write that failed after n bytes (a disk that filled
// up mid-frame): the partial frame is cut off, so the next append follows
// whole frames and the log still reads back once space returns. Where the
// cut fails too, the segment is closed at its torn end and the next append
// starts a new one, so nothing is ever written after a partial frame (a
// reader then reports that segment's end as damage, which
// ReadOptions.SkipCorrupt reads past).
func (w *Writer) dropPartial(n int) {
	if n <= 0 {
		return
	}
	if err := w.f.Truncate(w.size); err == nil {
		return
	}
	w.size += int64(n)
	_ = w.syncLocked() // what came before the torn frame stays durable
	w.f.Close()
	w.older = append(w.older, segment{seq: w.seq, path: w.f.Name(), size: w.size})
	w.f = nil
	w.opts.Logger.Error("experience log: a failed append left a partial record that could not be cut off; continuing in a new segment", "segment", w.older[len(w.older)-1].path)
}

// rotate closes the current segment (if one is open) and opens the next,
// then enforces the cap. When the next segment cannot be opened (a full
// disk), no segment is open and the next Append tries again.
func (w *Writer) rotate() error {
	if w.f != nil {
		if err := w.syncLocked(); err != nil {
			return err
		}
		if err := w.f.Close(); err != nil {
			return fmt.Errorf("closing experience segment: %w", err)
		}
		w.older = append(w.older, segment{seq: w.seq, path: w.f.Name(), size: w.size})
		w.f, w.dirty = nil, false
	}
	if err := w.openSegment(w.seq+1, 0); err != nil {
		return err
	}
	w.stats.Rotations++
	return w.prune()
}

// prune removes the oldest closed segments until they and a full current
// segment fit the cap: counting the current one at its full size makes the
// cap hold at every moment, not only right after a rotation.
func (w *Writer) prune() error {
	total := w.opts.SegmentBytes
	for _, s := range w.older {
		total += s.size
	}
	for len(w.older) > 0 && total > w.opts.MaxTotalBytes {
		old := w.older[0]
		if err := os.Remove(old.path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("removing oldest experience segment: %w", err)
		}
		total -= old.size
		w.older = w.older[1:]
		w.stats.SegmentsRemoved++
	}
	return nil
}

func (w *Writer) syncLocked() error {
	if !w.dirty || w.f == nil {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("fsync experience segment: %w", err)
	}
	w.dirty = false
	w.stats.Syncs++
	return nil
}

// Sync flushes what was appended to stable storage now.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	return w.syncLocked()
}

func (w *Writer) syncLoop() {
	defer close(w.stopped)
	t := time.NewTicker(w.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			if !w.closed {
				if err := w.syncLocked(); err != nil {
					w.opts.Logger.Error("experience log: periodic fsync failed", "err", err)
				}
			}
			w.mu.Unlock()
		}
	}
}

// Stats returns the writer's counters.
func (w *Writer) Stats() WriterStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Dir is the directory the writer appends to.
func (w *Writer) Dir() string { return w.dir }

// Close syncs and closes the log. Closing twice is a no-op.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	err := w.syncLocked()
	if w.f != nil {
		if cerr := w.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing experience segment: %w", cerr)
		}
	}
	w.mu.Unlock()
	if !w.opts.SyncEachAppend {
		close(w.stop)
	}
	<-w.stopped
	return err
}

// syncDir makes a created or removed file's directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening experience dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync experience dir: %w", err)
	}
	return nil
}
