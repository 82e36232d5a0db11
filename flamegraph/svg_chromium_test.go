package flamegraph

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/cdp"
)

const screenshotPath = "../testdata/flamegraph/screenshot.png"

// TestSVGInChromium opens the interactive SVG in headless Chromium, clicks a
// frame (a real mouse event dispatched by the browser) and checks that the
// view zoomed to it, then types into the search box and checks the
// highlight and the matched share. With -update it refreshes the screenshot
// kept under testdata.
func TestSVGInChromium(t *testing.T) {
	var svg bytes.Buffer
	if err := WriteSVG(&svg, syntheticProfile(1), SVGOptions{Title: "synthetic profile"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fg.svg")
	if err := os.WriteFile(path, svg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	page, ctx := cdp.OpenTestPage(t, cdp.Options{Width: 1220, Height: 320}, "file://"+path, 60*time.Second)
	frame := func(name string) string {
		return fmt.Sprintf(`[...document.querySelectorAll("g.f")].find(g => g.getAttribute("data-n") === %q)`, name)
	}
	width := func(name string) float64 {
		var w float64
		if err := page.Evaluate(ctx, frame(name)+`.querySelector("rect").getBoundingClientRect().width`, &w); err != nil {
			t.Fatalf("width of %s: %v", name, err)
		}
		return w
	}
	const handler = "github.com/acme/app/server.(*Handler).ServeHTTP"
	before := width(handler)
	full := 1200.0 - 2*svgPad
	// handler holds 65 of 98 samples.
	if math.Abs(before-full*65/98) > 2 {
		t.Fatalf("handler frame is %.1f px wide before zoom, want %.1f", before, full*65/98)
	}

	// Click the handler frame where Chromium puts it.
	var pt struct{ X, Y float64 }
	if err := page.Evaluate(ctx, `(() => { const r = `+frame(handler)+`.querySelector("rect").getBoundingClientRect(); return {X: r.x + 5, Y: r.y + r.height/2}; })()`, &pt); err != nil {
		t.Fatal(err)
	}
	if err := page.Click(ctx, pt.X, pt.Y); err != nil {
		t.Fatalf("click: %v", err)
	}
	var zoomed string
	if err := page.Evaluate(ctx, `document.documentElement.getAttribute("data-zoomed")`, &zoomed); err != nil || zoomed != handler {
		t.Fatalf("after the click data-zoomed = %q (%v), want the handler", zoomed, err)
	}
	if after := width(handler); math.Abs(after-full) > 1 {
		t.Fatalf("clicked frame is %.1f px wide, want the full %.1f", after, full)
	}
	// hotLoop is 40 of the handler's 65: it must have grown in proportion,
	// and a frame outside the zoomed subtree must be hidden.
	if hot := width("github.com/acme/app/encode.hotLoop"); math.Abs(hot-full*40/65) > 2 {
		t.Fatalf("child frame is %.1f px after zoom, want %.1f", hot, full*40/65)
	}
	var hidden string
	if err := page.Evaluate(ctx, frame("worker_loop")+`.style.display`, &hidden); err != nil || hidden != "none" {
		t.Fatalf("frame outside the zoom has display %q (%v), want none", hidden, err)
	}

	// Reset, then search.
	if err := page.ClickSelector(ctx, "#reset"); err != nil {
		t.Fatal(err)
	}
	if w := width(handler); math.Abs(w-before) > 1 {
		t.Fatalf("after reset the handler is %.1f px, want %.1f", w, before)
	}
	if err := page.ClickSelector(ctx, "#search"); err != nil {
		t.Fatal(err)
	}
	if err := page.InsertText(ctx, "hotLoop"); err != nil {
		t.Fatal(err)
	}
	var state struct {
		Matched     string
		Highlighted int
		Fill        string
		Text        string
	}
	if err := page.Evaluate(ctx, `({Matched: document.documentElement.getAttribute("data-matched"),
		Highlighted: document.querySelectorAll("g.hl").length,
		Fill: `+frame("github.com/acme/app/encode.hotLoop")+`.querySelector("rect").getAttribute("fill"),
		Text: document.getElementById("matched").textContent})`, &state); err != nil {
		t.Fatal(err)
	}
	t.Logf("search state: %+v", state)
	if state.Highlighted != 1 || state.Fill != "rgb(230,0,230)" {
		t.Fatalf("search highlighted %d frames, hotLoop fill %s", state.Highlighted, state.Fill)
	}
	if want := fmt.Sprintf("%.1f", 100*40.0/98); state.Matched != want {
		t.Fatalf("matched share %q, want %s%%", state.Matched, want)
	}

	png, err := page.Screenshot(ctx)
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot: %d bytes, %v", len(png), err)
	}
	if *update {
		if err := os.WriteFile(screenshotPath, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
