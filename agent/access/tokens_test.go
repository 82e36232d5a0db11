package access

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	tokA = "token-a-0123456789abcdef"
	tokB = "token-b-0123456789abcdef"
	tokC = "token-c-0123456789abcdef"
)

func TestFixedTokens(t *testing.T) {
	tk, err := NewTokens([]string{tokA, tokB}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !tk.Configured() || !tk.Check(tokA) || !tk.Check(tokB) || tk.Check(tokC) || tk.Check("") {
		t.Fatal("fixed tokens not checked")
	}
	if !tk.CheckHeader("Bearer "+tokA) || tk.CheckHeader(tokA) || tk.CheckHeader("bearer "+tokA) || tk.CheckHeader("Bearer "+tokA+"x") {
		t.Fatal("Authorization header not checked exactly")
	}
	if _, err := NewTokens([]string{"short"}, ""); !errors.Is(err, ErrBadToken) {
		t.Fatalf("a short token: %v", err)
	}
	var none *Tokens
	if none.Configured() || none.Check(tokA) {
		t.Fatal("nil Tokens accepts")
	}
	empty, _ := NewTokens(nil, "")
	if empty.Configured() || empty.Check("") {
		t.Fatal("empty Tokens accepts")
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A rotated file is in force at the next check after Recheck; a broken
// one is refused, reported, and the tokens in force stay.
func TestTokenFileReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	writeFile(t, path, "# the agent's token\n"+tokA+"\n\n")
	tk, err := NewTokens(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	tk.Recheck = time.Millisecond
	var mu sync.Mutex
	var reloads []error
	tk.OnReload = func(err error) { mu.Lock(); reloads = append(reloads, err); mu.Unlock() }
	if !tk.Configured() || !tk.Check(tokA) || tk.Check(tokB) {
		t.Fatal("file token not in force")
	}

	writeFile(t, path, tokB+"\n"+tokC+"\n")
	time.Sleep(2 * time.Millisecond)
	if tk.Check(tokA) || !tk.Check(tokB) || !tk.Check(tokC) {
		t.Fatal("rotated file not in force")
	}

	for name, bad := range map[string]string{"empty": "", "short token": "abc\n", "comments only": "# nothing\n"} {
		writeFile(t, path, bad)
		time.Sleep(2 * time.Millisecond)
		if !tk.Check(tokB) {
			t.Fatalf("%s: the tokens in force were dropped (fail open)", name)
		}
	}
	os.Remove(path)
	// Checks over several recheck periods: a missing file is one change,
	// reported once, not once a period.
	for range 5 {
		time.Sleep(2 * time.Millisecond)
		if !tk.Check(tokC) || tk.Check("") {
			t.Fatal("a removed file must keep the tokens in force")
		}
	}
	mu.Lock()
	var failed int
	for _, e := range reloads {
		if e != nil {
			failed++
			if !errors.Is(e, ErrBadToken) {
				t.Errorf("reload error %v is not ErrBadToken", e)
			}
		}
	}
	mu.Unlock()
	if failed != 4 {
		t.Errorf("%d failed reloads reported, want 4 (one per change): %v", failed, reloads)
	}
	writeFile(t, path, tokA+"\n")
	time.Sleep(2 * time.Millisecond)
	if !tk.Check(tokA) || tk.Check(tokB) {
		t.Fatal("a good file after bad ones not in force")
	}
}

// A Kubernetes Secret volume: the file is a symlink through ..data, which
// the kubelet swaps to a new directory.
func TestTokenFileSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"v1", "v2"} {
		os.Mkdir(filepath.Join(dir, d), 0o700)
	}
	os.WriteFile(filepath.Join(dir, "v1", "token"), []byte(tokA), 0o600)
	os.WriteFile(filepath.Join(dir, "v2", "token"), []byte(tokB), 0o600)
	if err := os.Symlink("v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join("..data", "token"), filepath.Join(dir, "token"))
	tk, err := NewTokens(nil, filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	tk.Recheck = time.Millisecond
	if !tk.Check(tokA) {
		t.Fatal("first token")
	}
	os.Symlink("v2", filepath.Join(dir, "..data_tmp"))
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	if tk.Check(tokA) || !tk.Check(tokB) {
		t.Fatal("the swapped Secret's token is not in force")
	}
}

func TestTokenFileRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]*string{"missing": nil, "empty": new(string), "short": ptr("tiny\n"), "huge": ptr(strings.Repeat("x", maxTokenFileBytes+1))} {
		path := filepath.Join(dir, name)
		if data != nil {
			os.WriteFile(path, []byte(*data), 0o600)
		}
		if _, err := NewTokens(nil, path); !errors.Is(err, ErrBadToken) {
			t.Errorf("%s: %v, want ErrBadToken", name, err)
		}
	}
}

func ptr(s string) *string { return &s }
