package agent

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/triage-agent/triage/flamegraph"
	"github.com/triage-agent/triage/internal/cdp"
)

// startProfilingAgent runs an agent with the real stack sampler writing a
// window every second.
func startProfilingAgent(t *testing.T) *testAgent {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the stack sampler needs root (CAP_BPF, CAP_PERFMON)")
	}
	ta := startAgent(t, Config{FlamegraphDir: filepath.Join(t.TempDir(), "fg"), FlamegraphInterval: time.Second})
	if ta.prof == nil {
		t.Fatalf("the profiler did not start:\n%s", ta.logs.String())
	}
	// The first window symbolises every binary it saw (their DWARF), which
	// takes seconds on a loaded machine.
	waitFor(t, 60*time.Second, "two flame-graph windows", func() bool { return len(ta.store.List()) >= 2 })
	return ta
}

// A headless Chromium opens /flamegraphs, follows the link to a window's
// SVG, and the SVG renders: an SVG document with laid-out frames.
func TestFlamegraphsPageInChromium(t *testing.T) {
	ta := startProfilingAgent(t)
	b, err := cdp.Launch(cdp.Options{})
	if errors.Is(err, cdp.ErrNoBrowser) {
		t.Fatalf("no Chromium (scripts/install-build-deps.sh installs it): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	page, err := b.NewPage(ctx, ta.url("/flamegraphs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := page.WaitFor(ctx, `document.querySelectorAll("tr.window a.svg").length >= 2`); err != nil {
		t.Fatal(err)
	}
	var href string
	if err := page.Evaluate(ctx, `document.querySelector("tr.window a.svg").href`, &href); err != nil {
		t.Fatal(err)
	}
	if err := page.ClickSelector(ctx, "tr.window a.svg"); err != nil {
		t.Fatal(err)
	}
	if err := page.WaitFor(ctx, `location.href === `+jsString(href)+` && document.readyState === "complete"`); err != nil {
		t.Fatal(err)
	}
	var rendered struct {
		Root   string  `json:"root"`
		Rects  int     `json:"rects"`
		Width  float64 `json:"width"`
		Height float64 `json:"height"`
	}
	expr := `(() => { const r = document.documentElement; const box = r.getBoundingClientRect();
		const frames = [...document.querySelectorAll("rect")].filter(e => e.getBoundingClientRect().width > 0);
		return {root: r.tagName, rects: frames.length, width: box.width, height: box.height}; })()`
	if err := page.Evaluate(ctx, expr, &rendered); err != nil {
		t.Fatal(err)
	}
	if rendered.Root != "svg" || rendered.Rects < 3 || rendered.Width <= 0 || rendered.Height <= 0 {
		t.Fatalf("the SVG did not render: %+v", rendered)
	}
	shot, err := page.Screenshot(ctx)
	if err != nil || len(shot) < 1000 {
		t.Fatalf("screenshot of the SVG: %d bytes, %v", len(shot), err)
	}
}

// The differential view between two windows renders through flamegraph's diff.
func TestFlamegraphDiffView(t *testing.T) {
	ta := startProfilingAgent(t)
	ws := ta.store.List()
	code, body := ta.get(t, "/flamegraphs/diff?a="+ws[1].Name+"&b="+ws[0].Name)
	if code != http.StatusOK || !strings.Contains(body, "<svg") {
		t.Fatalf("diff view: %d %.200s", code, body)
	}
	if code, _ := ta.get(t, "/flamegraphs/diff?a=nope&b="+ws[0].Name); code != http.StatusNotFound {
		t.Fatalf("diff with an unknown window: %d", code)
	}
	if code, _ := ta.get(t, "/flamegraphs/files/..%2F..%2Fetc%2Fpasswd"); code != http.StatusNotFound {
		t.Fatalf("path outside the store: %d", code)
	}
	if v := ta.metric(t, "triage_flamegraph_windows"); v < 2 {
		t.Fatalf("flamegraph_windows = %v", v)
	}
	// Windows were symbolised: the symboliser holds tables, within its cap.
	if v := ta.metric(t, "triage_flamegraph_symbol_cache_bytes"); v <= 0 || v > 2*16<<20 {
		t.Fatalf("flamegraph_symbol_cache_bytes = %v", v)
	}
	// The kernel's names were read for the windows' kernel frames (where a
	// window sampled the kernel at all: a second of samples on a node busy
	// in user space may hold none), at most twice a window beside the read
	// at start, and every kernel frame is named.
	windows := ta.metric(t, "triage_flamegraph_windows")
	reads := ta.metric(t, "triage_flamegraph_kallsyms_reads_total")
	kernelFrames, unnamed := kernelFramesIn(t, ta.store.List())
	t.Logf("%v windows, %d kernel frames, %v reads of kallsyms", windows, kernelFrames, reads)
	if reads > 1+2*windows+2 || (kernelFrames > 0 && reads < 2) {
		t.Fatalf("flamegraph_kallsyms_reads_total = %v after %v windows holding %d kernel frames", reads, windows, kernelFrames)
	}
	if unnamed > 0 {
		t.Errorf("%d of %d kernel frames left unnamed", unnamed, kernelFrames)
	}
}

// kernelFramesIn counts the kernel frames of the windows' profiles, and
// those without a name.
func kernelFramesIn(t *testing.T, ws []flamegraph.StoredWindow) (frames, unnamed int) {
	t.Helper()
	for _, w := range ws {
		for _, f := range w.Files {
			if f.Kind != "pprof" {
				continue
			}
			r, err := os.Open(f.Path)
			if err != nil {
				t.Fatal(err)
			}
			p, err := profile.Parse(r)
			r.Close()
			if err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
			for _, l := range p.Location {
				if l.Mapping == nil || l.Mapping.File != "[kernel.kallsyms]" {
					continue
				}
				frames++
				if len(l.Line) == 0 || l.Line[0].Function == nil || strings.HasPrefix(l.Line[0].Function.Name, "[kernel]+") {
					unnamed++
				}
			}
		}
	}
	return frames, unnamed
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
