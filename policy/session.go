package policy

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// ErrClosed reports a Decide on a closed Session.
var ErrClosed = errors.New("policy: session closed")

// MaxModelBytes bounds the model files LoadFile and the Reloader read; the
// policy network is kilobytes, so anything near this is not a triage model.
const MaxModelBytes = 64 << 20

// Session runs a triage model through ONNX Runtime. It implements Decider
// and is safe for concurrent use: ORT's Run is thread-safe, and each call
// takes its own input and output tensors from a pool.
type Session struct {
	// mu is held shared by every Decide and exclusively by Close, so Close
	// never frees the ORT session under a running call.
	mu     sync.RWMutex
	closed bool

	ort      *ort.DynamicAdvancedSession
	meta     Metadata
	mlp      *MLP
	device   string
	digest   [sha256.Size]byte
	maxBatch int
	tensors  tensorPool
}

// LoadFile reads and loads a model file; see LoadBytes.
func LoadFile(path string, cfg Config) (*Session, error) {
	b, err := readModelFile(path)
	if err != nil {
		return nil, err
	}
	s, err := LoadBytes(b, cfg)
	if err != nil {
		return nil, fmt.Errorf("loading model %s: %w", path, err)
	}
	return s, nil
}

func readModelFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening model: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat model %s: %w", path, err)
	}
	if st.Size() > MaxModelBytes {
		return nil, fmt.Errorf("%w: model %s is %d bytes, the limit is %d", ErrForeignModel, path, st.Size(), MaxModelBytes)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("reading model %s: %w", path, err)
	}
	return b, nil
}

// LoadBytes checks a model and creates its ONNX Runtime session. The model
// is decoded in Go first, so a truncated file, a foreign graph or another
// schema gets a precise error before ORT sees it.
func LoadBytes(model []byte, cfg Config) (*Session, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	mlp, meta, err := ReadONNX(model)
	if err != nil {
		return nil, err
	}
	if err := CheckSchema(meta); err != nil {
		return nil, err
	}
	if err := ensureRuntime(cfg.LibraryPath, cfg.Logger); err != nil {
		return nil, err
	}
	sess, device, err := newORTSession(model, mlp.NumMembers(), cfg)
	if err != nil {
		return nil, err
	}
	return &Session{
		ort:      sess,
		meta:     meta,
		mlp:      mlp,
		device:   device,
		digest:   sha256.Sum256(model),
		maxBatch: cfg.MaxBatch,
		tensors:  tensorPool{members: mlp.NumMembers()},
	}, nil
}

// Decide implements Decider: one ORT Run per MaxBatch states.
func (s *Session) Decide(states []State, out []Decision) error {
	if err := checkDecideArgs(states, out); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	for start := 0; start < len(states); start += s.maxBatch {
		end := min(start+s.maxBatch, len(states))
		if err := s.run(states[start:end], out[start:end]); err != nil {
			return err
		}
	}
	return nil
}

func (s *Session) run(states []State, out []Decision) error {
	io, err := s.tensors.get(batchClass(len(states)))
	if err != nil {
		return err
	}
	in := io.in.GetData()
	for i := range states {
		copy(in[i*NumFeatures:(i+1)*NumFeatures], states[i][:])
	}
	// The padding rows are neutral states whose answers are not read: the
	// network decides each row on its own.
	for i := len(states); i < io.n; i++ {
		copy(in[i*NumFeatures:(i+1)*NumFeatures], Neutral[:])
	}
	if err := s.ort.Run(io.inputs, io.outputs); err != nil {
		s.tensors.put(io)
		return fmt.Errorf("running the policy on %d states: %w", len(states), err)
	}
	q := io.out.GetData()
	k := s.tensors.members
	members := q // a plain network's one member is its Q-values
	if io.members != nil {
		members = io.members.GetData()
	}
	w := NumActions * max(1, k)
	for i := range out {
		copy(out[i].Q[:], q[i*NumActions:(i+1)*NumActions])
		out[i].settle(members[i*w:(i+1)*w], k, s.meta.Ranges, &states[i])
	}
	s.tensors.put(io)
	return nil
}

// Version implements Decider.
func (s *Session) Version() string { return s.meta.Version }

// Metadata returns the model's metadata.
func (s *Session) Metadata() Metadata { return s.meta }

// MLP returns the weights decoded from the model file, for fine-tuning and
// for checking the session against the Go forward pass.
func (s *Session) MLP() *MLP { return s.mlp }

// Device returns "cpu" or "cuda": what actually runs the model.
func (s *Session) Device() string { return s.device }

// Digest returns the SHA-256 of the model bytes, so a reloader can tell an
// unchanged file from a new one.
func (s *Session) Digest() [sha256.Size]byte { return s.digest }

// Close waits for running calls and frees the ORT session and tensors.
// Later calls to Decide return ErrClosed; Close is idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.tensors.destroy()
	if err := s.ort.Destroy(); err != nil {
		return fmt.Errorf("destroying ORT session: %w", err)
	}
	return nil
}
