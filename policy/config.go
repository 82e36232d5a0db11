package policy

import (
	"errors"
	"fmt"
	"log/slog"
)

// Devices a Config may name.
const (
	DeviceAuto = "auto"
	DeviceCPU  = "cpu"
	DeviceCUDA = "cuda"
)

var (
	// ErrBadDevice reports a Config.Device other than auto, cpu or cuda.
	ErrBadDevice = errors.New("policy: unknown device")
	// ErrCUDAUnavailable reports that --device=cuda was asked for and the
	// CUDA execution provider could not be set up.
	ErrCUDAUnavailable = errors.New("policy: CUDA execution provider unavailable")
)

// Config says how to run a model. The zero value means: try CUDA, fall back
// to CPU, find the library on its own, one intra-op thread, slog.Default().
type Config struct {
	// Device is "auto" (the default when ""), "cpu" or "cuda". auto tries
	// CUDA and falls back to CPU with one log line saying why; cuda fails
	// instead of falling back.
	Device string
	// LibraryPath is the ONNX Runtime shared library. "" tries
	// $TRIAGE_ONNXRUNTIME_LIB, then CachedLibraryPath(), then the loader's
	// search path. The first session of the process loads it; later ones
	// share it.
	LibraryPath string
	// CUDADeviceID picks the GPU when there are several.
	CUDADeviceID int
	// Threads is ORT's intra-op thread count; 0 means 1. The policy network
	// is tiny, so one thread per call with callers running concurrently
	// beats splitting one call across threads.
	Threads int
	// MaxBatch caps the states passed to one ORT Run; a longer Decide is
	// split. 0 means 1024.
	MaxBatch int
	// Logger receives the device fallback line; nil means slog.Default().
	Logger *slog.Logger
}

const defaultMaxBatch = 1024

func (c Config) withDefaults() (Config, error) {
	switch c.Device {
	case "":
		c.Device = DeviceAuto
	case DeviceAuto, DeviceCPU, DeviceCUDA:
	default:
		return c, fmt.Errorf("%w %q: want auto, cpu or cuda", ErrBadDevice, c.Device)
	}
	if c.Threads <= 0 {
		c.Threads = 1
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = defaultMaxBatch
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
