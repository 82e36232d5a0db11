package policy

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes m as an ONNX model at path atomically: to a temporary
// file in the same directory, synced, then renamed over path. A Reloader
// watching path therefore never sees a half-written model.
func WriteFile(path string, m *MLP, meta Metadata) error {
	b, err := MarshalONNX(m, meta)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("creating temporary model file: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("writing model %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("syncing model %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("closing model %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("chmod model %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("renaming model into %s: %w", path, err)
	}
	return nil
}
