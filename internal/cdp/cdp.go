// Package cdp is a small Chrome DevTools Protocol client for tests: it
// starts headless Chromium with --remote-debugging-pipe (no port, no
// websocket: commands go in on fd 3 and answers come out on fd 4, each a
// NUL-terminated JSON message), opens pages and drives them with real input
// events dispatched by the browser.
package cdp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Options configures Launch; the zero value means defaults.
type Options struct {
	// Path of the browser (default: the first of chromium, chromium-browser,
	// google-chrome found in PATH or /usr/bin).
	Path string
	// UserDataDir is the throwaway profile directory (default: a new
	// temporary directory removed on Close).
	UserDataDir string
	// Width and Height of the window (default 1280×800).
	Width, Height int
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
}

// ErrNoBrowser means no Chromium binary was found.
var ErrNoBrowser = errors.New("no chromium binary found")

// Browser is a running Chromium.
type Browser struct {
	cmd     *exec.Cmd
	toB     *os.File
	fromB   *os.File
	tmpDir  string
	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan message
	done    chan struct{}
	readErr error
}

type message struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *Error          `json:"error,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
}

// Error is an error answer of the protocol.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("cdp error %d: %s %s", e.Code, e.Message, e.Data) }

// FindBrowser returns the path of a Chromium binary.
func FindBrowser() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// Launch starts headless Chromium with the flags that keep it quiet and
// self-contained (no sandbox: tests run as root; no GPU, network services,
// sync or first-run UI).
func Launch(opts Options) (*Browser, error) {
	if opts.Path == "" {
		p, err := FindBrowser()
		if err != nil {
			return nil, err
		}
		opts.Path = p
	}
	if opts.Width <= 0 {
		opts.Width = 1280
	}
	if opts.Height <= 0 {
		opts.Height = 800
	}
	b := &Browser{pending: map[int64]chan message{}, done: make(chan struct{})}
	if opts.UserDataDir == "" {
		dir, err := os.MkdirTemp("", "cdp-profile-")
		if err != nil {
			return nil, fmt.Errorf("creating browser profile dir: %w", err)
		}
		b.tmpDir, opts.UserDataDir = dir, dir
	}
	// fd 3: the browser reads commands; fd 4: it writes answers.
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		cmdR.Close()
		cmdW.Close()
		return nil, err
	}
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
		"--remote-debugging-pipe", "--user-data-dir=" + opts.UserDataDir,
		fmt.Sprintf("--window-size=%d,%d", opts.Width, opts.Height),
	}
	args = append(args, opts.ExtraArgs...)
	args = append(args, "about:blank")
	b.cmd = exec.Command(opts.Path, args...)
	b.cmd.ExtraFiles = []*os.File{cmdR, outW}
	b.cmd.Stdout, b.cmd.Stderr = io.Discard, io.Discard
	if err := b.cmd.Start(); err != nil {
		cmdR.Close()
		cmdW.Close()
		outR.Close()
		outW.Close()
		b.cleanup()
		return nil, fmt.Errorf("starting %s: %w", opts.Path, err)
	}
	cmdR.Close()
	outW.Close()
	b.toB, b.fromB = cmdW, outR
	go b.readLoop()
	return b, nil
}

// maxMessage bounds one protocol message (screenshots are the big ones).
const maxMessage = 64 << 20

func (b *Browser) readLoop() {
	defer close(b.done)
	r := bufio.NewReaderSize(b.fromB, 1<<20)
	for {
		raw, err := r.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.readErr = fmt.Errorf("reading from browser: %w", err)
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		if len(raw) > maxMessage {
			continue
		}
		var m message
		if err := json.Unmarshal(raw[:len(raw)-1], &m); err != nil {
			continue
		}
		if m.ID == 0 {
			continue // an event: the tests poll state instead of following events
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// Call sends one command (to a page when sessionID is set) and decodes its
// result into result (may be nil).
func (b *Browser) Call(ctx context.Context, sessionID, method string, params, result any) error {
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return b.readErr
	}
	b.nextID++
	id := b.nextID
	ch := make(chan message, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	req := map[string]any{"id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	if sessionID != "" {
		req["sessionId"] = sessionID
	}
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := b.toB.Write(append(data, 0)); err != nil {
		return fmt.Errorf("sending %s: %w", method, err)
	}
	select {
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: browser went away", method)
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %w", method, m.Error)
		}
		if result != nil && len(m.Result) > 0 {
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("decoding %s result: %w", method, err)
			}
		}
		return nil
	}
}

// Close stops the browser and removes its temporary profile.
func (b *Browser) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = b.Call(ctx, "", "Browser.close", nil, nil)
	cancel()
	b.toB.Close()
	exited := make(chan error, 1)
	go func() { exited <- b.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = b.cmd.Process.Kill()
		<-exited
	}
	b.fromB.Close()
	b.cleanup()
	return nil
}

func (b *Browser) cleanup() {
	if b.tmpDir != "" {
		os.RemoveAll(b.tmpDir)
	}
}
