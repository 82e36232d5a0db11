package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// loadFile reads the file at path (what names it in errors) and parses
// it; a parse error names the path. It reads at most limit+1 bytes, so a
// file over the limit is refused by parse, never read whole.
func loadFile[T any](path, what string, limit int, parse func([]byte) (*T, error)) (*T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", what, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", what, path, err)
	}
	v, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// decodeStrict decodes one JSON object of at most limit bytes into v:
// unknown fields, trailing data and a truncated object are errors, each
// wrapping sentinel.
func decodeStrict(b []byte, limit int, v any, sentinel error) error {
	if len(b) > limit {
		return fmt.Errorf("%w: larger than %d bytes", sentinel, limit)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: truncated (%v)", sentinel, err)
		}
		return fmt.Errorf("%w: %v", sentinel, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after the JSON object", sentinel)
	}
	return nil
}

// parseValid decodes b strictly (decodeStrict) into a new T and validates
// it: a scenario and a calibration are both refused whole, never half-read.
func parseValid[T any, PT interface {
	*T
	Validate() error
}](b []byte, limit int, sentinel error) (*T, error) {
	v := PT(new(T))
	if err := decodeStrict(b, limit, v, sentinel); err != nil {
		return nil, err
	}
	if err := v.Validate(); err != nil {
		return nil, err
	}
	return v, nil
}
