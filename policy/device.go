package policy

import (
	"fmt"
	"strconv"

	ort "github.com/yalue/onnxruntime_go"
)

// cudaNeeds names what a node needs for the CUDA execution provider; the
// error for --device=cuda and the auto fallback line both carry it, and
// docs/gpu.md explains each file.
const cudaNeeds = "the CUDA execution provider needs libonnxruntime_providers_cuda.so and " +
	"libonnxruntime_providers_shared.so from the onnxruntime-gpu " + ORTVersion + " build next to the " +
	"libonnxruntime.so.1 in use (a CPU-only build lacks them), and CUDA 12 (libcudart.so.12, libcublas.so.12, " +
	"libcublasLt.so.12, libcufft.so.11, libcurand.so.10) plus cuDNN 9 (libcudnn.so.9 and its sub-libraries) " +
	"on the loader path; see docs/gpu.md"

// sessionOptions builds ORT session options for one device.
func sessionOptions(cfg Config, cuda bool) (*ort.SessionOptions, error) {
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("creating ORT session options: %w", err)
	}
	if err := configureThreads(opts, cfg.Threads); err != nil {
		opts.Destroy()
		return nil, err
	}
	if err := configureMemory(opts); err != nil {
		opts.Destroy()
		return nil, err
	}
	if cuda {
		if err := appendCUDA(opts, cfg.CUDADeviceID); err != nil {
			opts.Destroy()
			return nil, err
		}
	}
	return opts, nil
}

func configureThreads(opts *ort.SessionOptions, n int) error {
	if err := opts.SetIntraOpNumThreads(n); err != nil {
		return fmt.Errorf("setting ORT intra-op threads: %w", err)
	}
	if err := opts.SetInterOpNumThreads(1); err != nil {
		return fmt.Errorf("setting ORT inter-op threads: %w", err)
	}
	return nil
}

// configureMemory turns off what ONNX Runtime keeps to speed up large
// models: the CPU arena (a BFC allocator that grows by doubling chunks and
// keeps them) and memory patterns (buffers planned from the shapes of the
// first runs, kept per shape). The policy network's tensors are a few
// kilobytes, so plain malloc and free cost nothing measurable, and the
// batch size changes from call to call, which would make a pattern per
// size. docs/footprint.md has the measurements.
func configureMemory(opts *ort.SessionOptions) error {
	if err := opts.SetCpuMemArena(false); err != nil {
		return fmt.Errorf("turning off the ORT CPU arena: %w", err)
	}
	if err := opts.SetMemPattern(false); err != nil {
		return fmt.Errorf("turning off ORT memory patterns: %w", err)
	}
	return nil
}

func appendCUDA(opts *ort.SessionOptions, deviceID int) error {
	cudaOpts, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return fmt.Errorf("creating CUDA provider options: %w", err)
	}
	defer cudaOpts.Destroy()
	if err := cudaOpts.Update(map[string]string{"device_id": strconv.Itoa(deviceID)}); err != nil {
		return fmt.Errorf("configuring the CUDA provider for device %d: %w", deviceID, err)
	}
	if err := opts.AppendExecutionProviderCUDA(cudaOpts); err != nil {
		return fmt.Errorf("appending the CUDA execution provider: %w", err)
	}
	return nil
}

// newORTSession creates the session on the device cfg asks for and returns
// the device that actually runs it.
// members is the model's ensemble size; above 1 the session reads the
// members' output as well as the mean.
func newORTSession(model []byte, members int, cfg Config) (*ort.DynamicAdvancedSession, string, error) {
	if cfg.Device != DeviceCPU {
		s, err := createSession(model, members, cfg, true)
		if err == nil {
			return s, DeviceCUDA, nil
		}
		if cfg.Device == DeviceCUDA {
			return nil, "", fmt.Errorf("%w (device %d): %v; %s", ErrCUDAUnavailable, cfg.CUDADeviceID, err, cudaNeeds)
		}
		cfg.Logger.Info("policy: CUDA unavailable, running the model on CPU", "reason", err.Error(), "library", RuntimeLibrary(), "hint", "see docs/gpu.md")
	}
	s, err := createSession(model, members, cfg, false)
	if err != nil {
		return nil, "", err
	}
	return s, DeviceCPU, nil
}

func createSession(model []byte, members int, cfg Config, cuda bool) (*ort.DynamicAdvancedSession, error) {
	opts, err := sessionOptions(cfg, cuda)
	if err != nil {
		return nil, err
	}
	defer opts.Destroy()
	outputs := []string{OutputName}
	if members > 1 {
		outputs = append(outputs, MembersOutputName)
	}
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(model, []string{InputName}, outputs, opts)
	if err != nil {
		return nil, fmt.Errorf("creating ORT session: %w", err)
	}
	return s, nil
}
