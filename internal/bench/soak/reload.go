package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/defaultmodel"
)

// reloader replaces the agent's model file with a new version of the
// embedded default model (same weights, another version string) every
// period, by rename as a deploy does; the agent's file watch hot-swaps it.
type reloader struct {
	path    string
	mlp     *policy.MLP
	meta    policy.Metadata
	written atomic.Int64
}

func newReloader(path string) (*reloader, error) {
	m, meta, err := policy.ReadONNX(defaultmodel.Bytes())
	if err != nil {
		return nil, fmt.Errorf("reading the default model: %w", err)
	}
	r := &reloader{path: path, mlp: m, meta: meta}
	if err := r.write(0); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *reloader) write(n int) error {
	meta := r.meta
	meta.Version = fmt.Sprintf("soak-%d", n)
	b, err := policy.MarshalONNX(r.mlp, meta)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(r.path), "."+filepath.Base(r.path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("writing the model: %w", err)
	}
	return os.Rename(tmp, r.path)
}

func (r *reloader) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if r.write(n) == nil {
			r.written.Add(1)
		}
	}
}
