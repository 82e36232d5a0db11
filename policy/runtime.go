package policy

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// ORTVersion is the ONNX Runtime release this build is tested with; the
// fetch script caches it under this version.
const ORTVersion = "1.30.0"

// ErrRuntimeUnavailable reports that no ONNX Runtime shared library could
// be loaded. The error names every path tried and how to fetch the library.
var ErrRuntimeUnavailable = errors.New("policy: ONNX Runtime library not available")

// ONNX Runtime keeps one environment per process (onnxruntime_go holds it in
// package globals), so the library is loaded once. Unlike sync.Once, a failed
// load is remembered as failed only until the next call, which may name
// another path.
var ortEnv struct {
	mu   sync.Mutex
	path string // the library that is loaded; "" until one is
}

// RuntimeLibrary returns the path of the loaded ONNX Runtime library, or ""
// when none is loaded yet.
func RuntimeLibrary() string {
	ortEnv.mu.Lock()
	defer ortEnv.mu.Unlock()
	return ortEnv.path
}

// RuntimeVersion returns the version the loaded ONNX Runtime library
// reports (as `triage version` and the triage_build_info metric show it),
// or "" when none is loaded yet.
func RuntimeVersion() string {
	if RuntimeLibrary() == "" {
		return ""
	}
	return ort.GetVersion()
}

// LoadRuntime loads the ONNX Runtime library (explicit, else the search
// order of LoadFile) if it is not loaded yet, and returns its version and
// path.
func LoadRuntime(explicit string) (version, path string, err error) {
	if err := ensureRuntime(explicit, slog.Default()); err != nil {
		return "", "", err
	}
	return ort.GetVersion(), RuntimeLibrary(), nil
}

// CachedLibraryPath is where scripts/fetch-onnxruntime.sh puts the verified
// library: ${TRIAGE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/triage}/onnxruntime/VERSION/libonnxruntime.so.1.
func CachedLibraryPath() string {
	base := os.Getenv("TRIAGE_CACHE")
	if base == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return ""
			}
			cache = filepath.Join(home, ".cache")
		}
		base = filepath.Join(cache, "triage")
	}
	return filepath.Join(base, "onnxruntime", ORTVersion, "libonnxruntime.so.1")
}

// libraryCandidates lists the paths to try, in order. An explicit path is
// the only candidate: an operator who named a library wants that one, not a
// silent substitute.
func libraryCandidates(explicit string) []string {
	if explicit != "" {
		return []string{explicit}
	}
	var c []string
	if env := os.Getenv("TRIAGE_ONNXRUNTIME_LIB"); env != "" {
		c = append(c, env)
	}
	if p := CachedLibraryPath(); p != "" {
		if _, err := os.Stat(p); err == nil {
			c = append(c, p)
		}
	}
	// Bare names go through the dynamic loader's search path (ld.so.conf,
	// LD_LIBRARY_PATH), where a distribution or image would install it.
	return append(c, "libonnxruntime.so.1", "libonnxruntime.so", "/usr/local/lib/libonnxruntime.so.1")
}

// ensureRuntime loads the ONNX Runtime library once per process.
func ensureRuntime(explicit string, log *slog.Logger) error {
	ortEnv.mu.Lock()
	defer ortEnv.mu.Unlock()
	if ortEnv.path != "" {
		if explicit != "" && explicit != ortEnv.path {
			// The C library cannot be swapped inside a running process.
			log.Warn("ONNX Runtime is already loaded from another path; keeping it",
				"loaded", ortEnv.path, "requested", explicit)
		}
		return nil
	}
	var tried []string
	for _, p := range libraryCandidates(explicit) {
		ort.SetSharedLibraryPath(p)
		err := ort.InitializeEnvironment(ort.WithLogLevelError())
		if err == nil {
			ortEnv.path = p
			log.Debug("loaded ONNX Runtime", "path", p, "version", ort.GetVersion())
			return nil
		}
		tried = append(tried, fmt.Sprintf("%s (%v)", p, err))
	}
	return fmt.Errorf("%w: tried %s; fetch it with `make ort` (or scripts/fetch-onnxruntime.sh, which prints its path) "+
		"and pass that path with --onnxruntime-lib or TRIAGE_ONNXRUNTIME_LIB",
		ErrRuntimeUnavailable, strings.Join(tried, "; "))
}
