// Package access is who may call the agent: the bearer tokens (given on
// the command line or in a file that is re-read when it changes, so that a
// token need not show in /proc/PID/cmdline or environ) and the loopback
// rule for an agent configured with no credentials. The endpoint (every
// transport) and the admin port share one Tokens.
package access

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MinTokenBytes is the shortest token accepted: a guessable token is no
// authentication.
const MinTokenBytes = 16

// maxTokenFileBytes bounds the token file: it holds a few lines.
const maxTokenFileBytes = 64 << 10

// DefaultRecheck is how often a token file is looked at again: a rotated
// token is in force within this long.
const DefaultRecheck = time.Second

// ErrBadToken reports a token (or token file) that cannot be used.
var ErrBadToken = errors.New("access: bad token")

// Tokens is the set of accepted bearer tokens: fixed ones and those of a
// file. Safe for concurrent use. The file is checked (one stat) at most
// every Recheck when a token is verified, and read again when its size,
// modification time or inode changed (a Kubernetes Secret volume swaps a
// symlink, which changes the inode). A file that becomes unreadable, empty
// or holds a short token is refused and the tokens in force stay: failing
// open would let anyone in.
type Tokens struct {
	fixed [][]byte
	file  string

	// OnReload, when set, is told the outcome of every re-read of the file
	// (nil: the new tokens are in force). Set it before first use.
	OnReload func(error)
	// Recheck overrides DefaultRecheck (tests). Set it before first use.
	Recheck time.Duration

	fromFile  atomic.Pointer[[][]byte]
	nextCheck atomic.Int64 // unix nanos
	mu        sync.Mutex   // one re-read at a time
	sig       fileSig
}

// NewTokens returns the tokens given plus those of file ("" for none).
// Each token must have at least MinTokenBytes bytes; the file must be
// readable and hold at least one token (one per line; blank lines and lines
// starting with # are ignored).
func NewTokens(fixed []string, file string) (*Tokens, error) {
	t := &Tokens{file: file}
	for _, s := range fixed {
		if len(s) < MinTokenBytes {
			return nil, fmt.Errorf("%w: a bearer token must have at least %d characters", ErrBadToken, MinTokenBytes)
		}
		t.fixed = append(t.fixed, []byte(s))
	}
	if file != "" {
		sig, toks, err := readTokenFile(file)
		if err != nil {
			return nil, err
		}
		t.sig = sig
		t.fromFile.Store(&toks)
	}
	return t, nil
}

// Configured reports whether any token is required.
func (t *Tokens) Configured() bool { return t != nil && (len(t.fixed) > 0 || t.file != "") }

// Check reports whether got is one of the tokens, in constant time over
// the set (every token is compared).
func (t *Tokens) Check(got string) bool {
	if t == nil {
		return false
	}
	t.maybeReload()
	g := []byte(got)
	ok := 0
	for _, tok := range t.fixed {
		ok |= subtle.ConstantTimeCompare(g, tok)
	}
	if p := t.fromFile.Load(); p != nil {
		for _, tok := range *p {
			ok |= subtle.ConstantTimeCompare(g, tok)
		}
	}
	return ok == 1
}

// CheckHeader checks an HTTP Authorization header ("Bearer <token>").
func (t *Tokens) CheckHeader(h string) bool {
	tok, ok := strings.CutPrefix(h, "Bearer ")
	return ok && t.Check(tok)
}

func (t *Tokens) maybeReload() {
	if t.file == "" {
		return
	}
	now := time.Now().UnixNano()
	if now < t.nextCheck.Load() {
		return
	}
	every := t.Recheck
	if every <= 0 {
		every = DefaultRecheck
	}
	t.nextCheck.Store(now + int64(every))
	t.mu.Lock()
	defer t.mu.Unlock()
	// A file that cannot be stat'ed has the zero signature, which no file
	// that exists has (its time is set): so a file still missing is no
	// change, and is reported once, like any other.
	sig, err := statSig(t.file)
	if sig == t.sig {
		return
	}
	var toks [][]byte
	if err == nil {
		sig, toks, err = readTokenFile(t.file)
	} else {
		err = fmt.Errorf("%w: token file: %w", ErrBadToken, err)
	}
	if err != nil {
		// Tried once per change of the file, not on every check.
		t.sig = sig
		if t.OnReload != nil {
			t.OnReload(err)
		}
		return
	}
	t.sig = sig
	t.fromFile.Store(&toks)
	if t.OnReload != nil {
		t.OnReload(nil)
	}
}

func readTokenFile(path string) (fileSig, [][]byte, error) {
	sig, err := statSig(path)
	if err != nil {
		return sig, nil, fmt.Errorf("%w: token file: %w", ErrBadToken, err)
	}
	if sig.size > maxTokenFileBytes {
		return sig, nil, fmt.Errorf("%w: token file %s has %d bytes, at most %d", ErrBadToken, path, sig.size, maxTokenFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return sig, nil, fmt.Errorf("%w: token file: %w", ErrBadToken, err)
	}
	var toks [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if len(s) < MinTokenBytes {
			return sig, nil, fmt.Errorf("%w: token file %s line %d: a token must have at least %d characters", ErrBadToken, path, line, MinTokenBytes)
		}
		toks = append(toks, []byte(s))
	}
	if len(toks) == 0 {
		return sig, nil, fmt.Errorf("%w: token file %s holds no token", ErrBadToken, path)
	}
	return sig, toks, nil
}
