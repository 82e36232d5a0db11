package flamegraph

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
)

// StoreConfig configures NewStore; the zero value (plus Dir) means defaults.
type StoreConfig struct {
	Dir string
	// MaxBytes caps the total size of all windows (default 256 MiB).
	MaxBytes int64
	// MaxWindows caps their number (default 48: a day of 30-minute windows).
	MaxWindows int
}

// ErrNoStoreDir means StoreConfig.Dir is empty.
var ErrNoStoreDir = errors.New("flame graph store needs a directory")

// Store keeps the files of recent windows in one directory, removing the
// oldest windows first when either cap is exceeded. Windows are found by
// listing the directory, so a restarted agent keeps (and caps) what it
// wrote before. Safe for concurrent use.
type Store struct {
	cfg StoreConfig
	mu  sync.Mutex
}

// StoredWindow is one window on disk.
type StoredWindow struct {
	Name  string // file prefix within the directory, e.g. "20261202T130600.000Z-cpu"
	Time  time.Time
	Files []StoredFile
	Bytes int64
}

// StoredFile is one file of a window.
type StoredFile struct {
	Kind string // "pprof", "folded", "svg"
	Path string
	Size int64
}

// NewStore creates the directory if needed.
func NewStore(cfg StoreConfig) (*Store, error) {
	if cfg.Dir == "" {
		return nil, ErrNoStoreDir
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 256 << 20
	}
	if cfg.MaxWindows <= 0 {
		cfg.MaxWindows = 48
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating flame graph store: %w", err)
	}
	return &Store{cfg: cfg}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.cfg.Dir }

const windowTimeLayout = "20060102T150405.000Z"

// Save writes one window's pprof, folded and SVG files named after its time
// and kind (e.g. "cpu", "offcpu"), then prunes.
func (s *Store) Save(at time.Time, kind string, p *profile.Profile, opts SVGOptions) (StoredWindow, error) {
	name := at.UTC().Format(windowTimeLayout) + "-" + sanitizeKind(kind)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := WriteFiles(filepath.Join(s.cfg.Dir, name), p, opts); err != nil {
		return StoredWindow{}, err
	}
	if err := s.pruneLocked(name); err != nil {
		return StoredWindow{}, err
	}
	for _, w := range s.listLocked() {
		if w.Name == name {
			return w, nil
		}
	}
	return StoredWindow{}, fmt.Errorf("window %s vanished after writing", name)
}

func sanitizeKind(k string) string {
	if k == "" {
		return "profile"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, strings.ToLower(k))
}

// List returns the windows on disk, newest first.
func (s *Store) List() []StoredWindow {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listLocked()
}

func (s *Store) listLocked() []StoredWindow {
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return nil
	}
	byName := map[string]*StoredWindow{}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		name, kind, ok := splitWindowFile(e.Name())
		if !ok {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		w := byName[name]
		if w == nil {
			ts, _, _ := strings.Cut(name, "-")
			t, err := time.Parse(windowTimeLayout, ts)
			if err != nil {
				continue
			}
			w = &StoredWindow{Name: name, Time: t}
			byName[name] = w
		}
		w.Files = append(w.Files, StoredFile{Kind: kind, Path: filepath.Join(s.cfg.Dir, e.Name()), Size: info.Size()})
		w.Bytes += info.Size()
	}
	out := make([]StoredWindow, 0, len(byName))
	for _, w := range byName {
		sort.Slice(w.Files, func(i, j int) bool { return w.Files[i].Kind < w.Files[j].Kind })
		out = append(out, *w)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.After(out[j].Time)
		}
		return out[i].Name > out[j].Name
	})
	return out
}

func splitWindowFile(file string) (name, kind string, ok bool) {
	for suffix, k := range map[string]string{SuffixPprof: "pprof", SuffixFolded: "folded", SuffixSVG: "svg"} {
		if strings.HasSuffix(file, suffix) {
			return strings.TrimSuffix(file, suffix), k, true
		}
	}
	return "", "", false
}

// pruneLocked removes the oldest windows until both caps hold; keep is never
// removed, so a single window larger than the byte cap still gets written.
func (s *Store) pruneLocked(keep string) error {
	ws := s.listLocked()
	var total int64
	for _, w := range ws {
		total += w.Bytes
	}
	count := len(ws)
	var errs []error
	for i := len(ws) - 1; i >= 0 && (count > s.cfg.MaxWindows || total > s.cfg.MaxBytes); i-- {
		if ws[i].Name == keep {
			continue
		}
		for _, f := range ws[i].Files {
			if err := os.Remove(f.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		total -= ws[i].Bytes
		count--
	}
	return errors.Join(errs...)
}
