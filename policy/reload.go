package policy

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ErrUnchanged reports a Reload of the model that is already running; the
// session is kept and nothing is swapped.
var ErrUnchanged = errors.New("policy: model unchanged")

// Reloader serves a Session and swaps in a new one from a file without
// stopping callers. The swap is atomic: a Decide runs wholly on the old or
// wholly on the new model. A file that is unreadable, truncated, foreign or
// of another schema is refused and the running model stays. Reloader
// implements Decider and is safe for concurrent use.
type Reloader struct {
	cfg     Config
	current atomic.Pointer[Session]
	mu      sync.Mutex // serialises Reload, so two swaps cannot interleave
	closed  bool       // under mu: a closed Reloader loads nothing more
	onSwap  func(old, new Metadata)
	onError func(path string, err error)

	swaps, failures atomic.Uint64
	lastErr         atomic.Pointer[reloadError]
}

type reloadError struct {
	err error
	at  time.Time
}

// ReloaderOption configures a Reloader.
type ReloaderOption func(*Reloader)

// OnSwap is called after a new model has replaced the old one.
func OnSwap(f func(old, new Metadata)) ReloaderOption {
	return func(r *Reloader) { r.onSwap = f }
}

// OnReloadError is called when a reload is refused, with the reason; the
// agent logs it and counts it on /metrics.
func OnReloadError(f func(path string, err error)) ReloaderOption {
	return func(r *Reloader) { r.onError = f }
}

// NewReloader serves initial and loads later models with cfg. The Reloader
// owns initial from now on and closes it when it is replaced or on Close.
// With Device auto, later models run where initial runs.
func NewReloader(initial *Session, cfg Config, opts ...ReloaderOption) (*Reloader, error) {
	if initial == nil {
		return nil, errors.New("policy: NewReloader needs an initial session")
	}
	r := &Reloader{cfg: cfg}
	if (cfg.Device == "" || cfg.Device == DeviceAuto) && initial.Device() == DeviceCPU {
		// auto already fell back (and said why) for the initial model; later
		// models go straight to the CPU instead of repeating the attempt and
		// the log line on every reload.
		r.cfg.Device = DeviceCPU
	}
	for _, o := range opts {
		o(r)
	}
	r.current.Store(initial)
	return r, nil
}

// Current returns the session serving now. It may be closed by a later
// swap at any time, so callers that keep it should prefer r.Decide.
func (r *Reloader) Current() *Session { return r.current.Load() }

// Decide implements Decider on the current model. A call that races a swap
// and finds its session just closed retries on the new one.
func (r *Reloader) Decide(states []State, out []Decision) error {
	for {
		s := r.current.Load()
		err := s.Decide(states, out)
		if errors.Is(err, ErrClosed) && r.current.Load() != s {
			continue
		}
		return err
	}
}

// Version implements Decider.
func (r *Reloader) Version() string { return r.current.Load().Version() }

// Metadata returns the current model's metadata.
func (r *Reloader) Metadata() Metadata { return r.current.Load().Metadata() }

// Device returns the device of the current model.
func (r *Reloader) Device() string { return r.current.Load().Device() }

// ReloadStats counts swaps and refusals, for /metrics.
type ReloadStats struct {
	Swaps, Failures uint64
	LastError       error // nil when no reload has been refused
	LastErrorAt     time.Time
}

// Stats returns the counters.
func (r *Reloader) Stats() ReloadStats {
	st := ReloadStats{Swaps: r.swaps.Load(), Failures: r.failures.Load()}
	if e := r.lastErr.Load(); e != nil {
		st.LastError, st.LastErrorAt = e.err, e.at
	}
	return st
}

// Reload loads path and swaps it in. On any error the running model stays;
// ErrUnchanged means the file holds the model already running.
func (r *Reloader) Reload(path string) error {
	b, err := readModelFile(path)
	if err != nil {
		return r.refuse(path, err)
	}
	return r.ReloadBytes(path, b)
}

// ReloadBytes is Reload for a model already in memory; name labels errors.
func (r *Reloader) ReloadBytes(name string, model []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	old := r.current.Load()
	if sha256.Sum256(model) == old.Digest() {
		return ErrUnchanged
	}
	next, err := LoadBytes(model, r.cfg)
	if err != nil {
		return r.refuse(name, err)
	}
	if err := probe(next); err != nil {
		next.Close()
		return r.refuse(name, err)
	}
	r.current.Store(next)
	r.swaps.Add(1)
	// Close waits for calls still running on the old session; calls that
	// arrive after the swap already see the new one.
	if err := old.Close(); err != nil {
		r.cfg.loggerOrDefault().Warn("policy: closing the replaced model", "err", err)
	}
	if r.onSwap != nil {
		r.onSwap(old.Metadata(), next.Metadata())
	}
	return nil
}

// probe runs the new model once on the neutral state before it serves, so a
// model that loads but cannot run, or answers NaN, never replaces a good one.
func probe(s *Session) error {
	var out [1]Decision
	if err := s.Decide([]State{Neutral}, out[:]); err != nil {
		return fmt.Errorf("probing the new model: %w", err)
	}
	for a, q := range out[0].Q {
		if q != q || q > 3.4e38 || q < -3.4e38 {
			return fmt.Errorf("%w: probing the new model: Q[%d] is %v on the neutral state", ErrForeignModel, a, q)
		}
	}
	return nil
}

func (r *Reloader) refuse(path string, err error) error {
	err = fmt.Errorf("reloading %s (keeping model %q): %w", path, r.current.Load().Version(), err)
	r.failures.Add(1)
	r.lastErr.Store(&reloadError{err: err, at: time.Now()})
	if r.onError != nil {
		r.onError(path, err)
	}
	return err
}

// Watch polls path every interval and reloads it when its size, mtime or
// content changes, until ctx is done or the Reloader is closed. A bad file is refused once (through
// OnReloadError and Stats) and retried only after it changes again, so a
// half-written file is picked up when the writer finishes. Writers should
// still rename a finished file into place.
func (r *Reloader) Watch(ctx context.Context, path string, interval time.Duration) error {
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	// The first tick always reads the file: it may have changed between the
	// initial load and this call. An unchanged file costs one hash.
	var seen fileStamp
	missing := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		st, err := os.Stat(path)
		if err != nil {
			// Report a missing file once, not on every tick.
			if !missing {
				r.refuse(path, fmt.Errorf("stat model: %w", err))
				missing, seen = true, fileStamp{}
			}
			continue
		}
		missing = false
		now := stampOf(st)
		if now == seen {
			continue
		}
		seen = now
		b, err := readModelFile(path)
		if err != nil {
			r.refuse(path, err)
			continue
		}
		// Refusals were reported through refuse; ErrUnchanged needs nothing.
		if err := r.ReloadBytes(path, b); errors.Is(err, ErrClosed) {
			return err
		}
	}
}

type fileStamp struct {
	size, mtimeNs int64
}

func stampOf(st os.FileInfo) fileStamp {
	return fileStamp{size: st.Size(), mtimeNs: st.ModTime().UnixNano()}
}

// Close closes the current session; later reloads return ErrClosed.
func (r *Reloader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return r.current.Load().Close()
}

func (c Config) loggerOrDefault() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}
