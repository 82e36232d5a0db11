package flamegraph

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStoreCapsCountAndBytes(t *testing.T) {
	dir := t.TempDir()
	s, err := NewStore(StoreConfig{Dir: dir, MaxWindows: 3})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	p := syntheticProfile(1)
	for i := 0; i < 5; i++ {
		w, err := s.Save(base.Add(time.Duration(i)*time.Minute), "cpu", p, SVGOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Files) != 3 || w.Bytes == 0 {
			t.Fatalf("window %+v", w)
		}
	}
	ws := s.List()
	if len(ws) != 3 {
		t.Fatalf("%d windows kept, want 3", len(ws))
	}
	if !ws[0].Time.Equal(base.Add(4*time.Minute)) || !ws[2].Time.Equal(base.Add(2*time.Minute)) {
		t.Fatalf("kept %v .. %v, want the newest three", ws[0].Time, ws[2].Time)
	}
	for _, f := range ws[0].Files {
		if _, err := os.Stat(f.Path); err != nil {
			t.Fatal(err)
		}
	}

	// A byte cap below two windows keeps only the newest.
	one := ws[0].Bytes
	s2, _ := NewStore(StoreConfig{Dir: dir, MaxWindows: 10, MaxBytes: one + one/2})
	if _, err := s2.Save(base.Add(10*time.Minute), "cpu", p, SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	ws = s2.List()
	if len(ws) != 1 || !ws[0].Time.Equal(base.Add(10*time.Minute)) {
		t.Fatalf("byte cap kept %d windows: %+v", len(ws), ws)
	}
	// Files that are not windows are left alone.
	other := filepath.Join(dir, "README")
	os.WriteFile(other, []byte("x"), 0o644)
	s2.Save(base.Add(11*time.Minute), "cpu", p, SVGOptions{})
	if _, err := os.Stat(other); err != nil {
		t.Fatal("store removed a file that is not a window")
	}
}

func TestStoreNeedsDir(t *testing.T) {
	if _, err := NewStore(StoreConfig{}); !errors.Is(err, ErrNoStoreDir) {
		t.Fatalf("err %v", err)
	}
}
