package cdp

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestClickAndType drives a small page with real input events.
func TestClickAndType(t *testing.T) {
	page := filepath.Join(t.TempDir(), "p.html")
	html := `<html><body><button id="b" style="width:200px;height:50px" onclick="document.body.dataset.clicked='yes'">x</button>
<input id="i" oninput="document.body.dataset.typed=this.value"></body></html>`
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	p, ctx := OpenTestPage(t, Options{}, "file://"+page, 30*time.Second)
	if err := p.ClickSelector(ctx, "#b"); err != nil {
		t.Fatal(err)
	}
	var clicked string
	if err := p.Evaluate(ctx, `document.body.dataset.clicked || ""`, &clicked); err != nil || clicked != "yes" {
		t.Fatalf("click not delivered: %q %v", clicked, err)
	}
	if err := p.ClickSelector(ctx, "#i"); err != nil {
		t.Fatal(err)
	}
	if err := p.InsertText(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	var typed string
	if err := p.Evaluate(ctx, `document.body.dataset.typed || ""`, &typed); err != nil || typed != "hello" {
		t.Fatalf("typing not delivered: %q %v", typed, err)
	}
	if err := p.Evaluate(ctx, `nosuchfunction()`, nil); err == nil {
		t.Fatal("a JavaScript exception was not reported")
	}
	png, err := p.Screenshot(ctx)
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot: %d bytes, %v", len(png), err)
	}
}
