package cdp

import (
	"context"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/testenv"
)

// OpenTestPage launches the browser with opts and opens url in it for t:
// the browser closes when t ends, and the context returned bounds t's
// commands to the page (within). No browser installed is
// testenv.Unavailable: a skip, or a failure where CI is set.
func OpenTestPage(t testing.TB, opts Options, url string, within time.Duration) (*Page, context.Context) {
	t.Helper()
	if _, err := FindBrowser(); err != nil {
		testenv.Unavailable(t, "chromium not installed (Debian package chromium)")
	}
	b, err := Launch(opts)
	if err != nil {
		t.Fatalf("launching the browser: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), within)
	t.Cleanup(cancel)
	p, err := b.NewPage(ctx, url)
	if err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
	return p, ctx
}
