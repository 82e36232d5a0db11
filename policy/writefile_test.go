package policy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.onnx")
	if err := WriteFile(path, BootstrapMLP(), BootstrapMetadata()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, mustMarshal(t, BootstrapMLP(), BootstrapMetadata())) {
		t.Error("file differs from MarshalONNX")
	}
	if err := WriteFile(path, &MLP{}, BootstrapMetadata()); !errors.Is(err, ErrBadShape) {
		t.Errorf("bad MLP: %v, want ErrBadShape", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "dir.onnx"), BootstrapMLP(), BootstrapMetadata()); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}
