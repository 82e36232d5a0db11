package policy

import (
	"bytes"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
)

// These tests run where no CUDA provider is installed (the CPU build of ONNX
// Runtime that `make ort` fetches); they check the fallback and the error an
// operator sees. On a node with the GPU build they check the CUDA session.

func TestDeviceAutoFallsBackWithOneLine(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := randomMLP(rand.New(rand.NewPCG(3, 4)), 8)
	s, err := LoadBytes(mustMarshal(t, m, testMetadata("auto")), Config{Logger: log})
	if err != nil {
		t.Fatalf("LoadBytes with device auto: %v", err)
	}
	defer s.Close()
	lines := strings.Count(logs.String(), "CUDA unavailable")
	switch s.Device() {
	case DeviceCPU:
		if lines != 1 {
			t.Fatalf("auto fell back to CPU with %d fallback lines, want exactly 1; log:\n%s", lines, logs.String())
		}
		var line string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "CUDA unavailable") {
				line = l
			}
		}
		for _, want := range []string{"running the model on CPU", "reason=", "docs/gpu.md"} {
			if !strings.Contains(line, want) {
				t.Errorf("fallback line lacks %q: %s", want, line)
			}
		}
		t.Logf("fallback line: %s", line)
	case DeviceCUDA:
		if lines != 0 {
			t.Errorf("running on CUDA but logged a fallback: %s", logs.String())
		}
	default:
		t.Fatalf("Device() = %q", s.Device())
	}
	checkAgainstForward(t, s, m)
}

func TestDeviceCUDAErrorNamesProviderLibraries(t *testing.T) {
	model := mustMarshal(t, randomMLP(rand.New(rand.NewPCG(5, 6)), 8), testMetadata("cuda"))
	s, err := LoadBytes(model, Config{Device: DeviceCUDA, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		defer s.Close()
		if s.Device() != DeviceCUDA {
			t.Fatalf("device cuda gave a session on %q", s.Device())
		}
		t.Logf("this node has a working CUDA provider; nothing to refuse")
		return
	}
	if !errors.Is(err, ErrCUDAUnavailable) {
		t.Fatalf("error %v does not wrap ErrCUDAUnavailable", err)
	}
	for _, want := range []string{"libonnxruntime_providers_cuda.so", "libonnxruntime_providers_shared.so", "libcudart.so.12", "libcudnn.so.9", "docs/gpu.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	t.Logf("device cuda error: %v", err)
}

func TestDeviceUnknownIsRefused(t *testing.T) {
	model := mustMarshal(t, randomMLP(rand.New(rand.NewPCG(7, 8))), testMetadata("x"))
	_, err := LoadBytes(model, Config{Device: "tpu"})
	if !errors.Is(err, ErrBadDevice) || !strings.Contains(err.Error(), `"tpu"`) {
		t.Fatalf("device tpu: error %v, want ErrBadDevice naming it", err)
	}
}
