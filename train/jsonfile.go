package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// readFile reads at most limit+1 bytes of the file at path, so a file
// over the limit is refused by its parser, never read whole.
func readFile(path, what string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", what, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", what, path, err)
	}
	return b, nil
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
