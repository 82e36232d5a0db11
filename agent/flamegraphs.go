package agent

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/pprof/profile"

	"github.com/triage-agent/triage/agent/profiling"
	"github.com/triage-agent/triage/bpf"
	"github.com/triage-agent/triage/flamegraph"
)

// newProfiler loads the stack sampler; without it the agent runs without
// flame graphs (and says so), never fails.
func newProfiler(log *slog.Logger, cfg Config, procs windowProcs) profiler {
	mode, _ := profiling.ParseUnwindMode(cfg.FlamegraphUnwind) // checked by withDefaults
	r, err := profiling.New(profiling.Config{Logger: log, Unwind: mode,
		Profiler: bpf.ProfilerOptions{CopyRingBytes: copyRingBytes(runtime.NumCPU())},
		// The DWARF read for inline frames is held by the budget of the
		// cache it builds: a larger read would grow the heap past it.
		Symbolizer: flamegraph.SymbolizerConfig{MaxCacheBytes: cfg.FlamegraphCacheBytes, MaxDWARFBytes: cfg.FlamegraphCacheBytes,
			AfterBuild: newBuildMemory().afterBuild},
		BeforeWindow: procs.begin,
		AfterWindow: func() {
			procs.end()
			_, _ = returnFreeMemory()
		}})
	if err != nil {
		log.Warn("flame-graph recorder unavailable; /flamegraphs lists what is on disk", "err", err)
		return nil
	}
	return r
}

// maxProfileBytes bounds a pprof file read for the diff view.
const maxProfileBytes = 64 << 20

var flamegraphsPage = template.Must(template.New("fg").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>triage flame graphs — {{.Node}}</title>
<style>body{font:14px sans-serif;margin:2em}table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}</style>
</head><body>
<h1>Flame graphs of {{.Node}}</h1>
{{if not .Enabled}}<p>The flame-graph recorder is off (no --flamegraph-dir).</p>{{end}}
{{if .Enabled}}{{if not .Windows}}<p id="empty">No window recorded yet; one is written every {{.Interval}}.</p>{{end}}{{end}}
{{if .Windows}}
<form action="/flamegraphs/diff" method="get" id="diff">
Differential view: base <select name="a">{{range .Windows}}{{if .Pprof}}<option value="{{.Name}}">{{.Name}}</option>{{end}}{{end}}</select>
against <select name="b">{{range .Windows}}{{if .Pprof}}<option value="{{.Name}}">{{.Name}}</option>{{end}}{{end}}</select>
<button type="submit">diff</button> (red: more samples in the second, blue: fewer)
</form>
<table><tr><th>window</th><th>time (UTC)</th><th>size</th><th>files</th></tr>
{{range .Windows}}<tr class="window"><td>{{.Name}}</td><td>{{.Time}}</td><td>{{.Size}}</td><td>
{{if .SVG}}<a class="svg" href="/flamegraphs/files/{{.SVG}}">SVG</a>{{end}}
{{if .Pprof}}<a href="/flamegraphs/files/{{.Pprof}}">pprof</a>{{end}}
{{if .Folded}}<a href="/flamegraphs/files/{{.Folded}}">folded</a>{{end}}</td></tr>
{{end}}</table>{{end}}
</body></html>
`))

type fgRow struct {
	Name, Time, Size, SVG, Pprof, Folded string
}

func (a *Agent) handleFlamegraphs(w http.ResponseWriter, r *http.Request) {
	data := struct {
		Node     string
		Enabled  bool
		Interval time.Duration
		Windows  []fgRow
	}{Node: a.cfg.NodeName, Enabled: a.store != nil, Interval: a.cfg.FlamegraphInterval}
	if a.store != nil {
		for _, win := range a.store.List() {
			row := fgRow{Name: win.Name, Time: win.Time.UTC().Format(time.RFC3339), Size: humanBytes(win.Bytes)}
			for _, f := range win.Files {
				base := filepath.Base(f.Path)
				switch f.Kind {
				case "svg":
					row.SVG = base
				case "pprof":
					row.Pprof = base
				case "folded":
					row.Folded = base
				}
			}
			data.Windows = append(data.Windows, row)
		}
	}
	var buf bytes.Buffer
	if err := flamegraphsPage.Execute(&buf, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// storedFile finds a file of a listed window by its base name: only names
// the store lists are served, so no path from the request reaches the disk.
func (a *Agent) storedFile(base string) (flamegraph.StoredFile, bool) {
	if a.store == nil {
		return flamegraph.StoredFile{}, false
	}
	for _, win := range a.store.List() {
		for _, f := range win.Files {
			if filepath.Base(f.Path) == base {
				return f, true
			}
		}
	}
	return flamegraph.StoredFile{}, false
}

func (a *Agent) handleFlamegraphFile(w http.ResponseWriter, r *http.Request) {
	f, ok := a.storedFile(r.PathValue("file"))
	if !ok {
		http.Error(w, "no such flame-graph file", http.StatusNotFound)
		return
	}
	switch f.Kind {
	case "svg":
		w.Header().Set("Content-Type", "image/svg+xml")
	case "pprof":
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", "attachment; filename="+filepath.Base(f.Path))
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	http.ServeFile(w, r, f.Path)
}

// windowProfile reads the pprof file of a listed window.
func (a *Agent) windowProfile(name string) (*profile.Profile, error) {
	if a.store == nil {
		return nil, fmt.Errorf("the flame-graph recorder is off")
	}
	for _, win := range a.store.List() {
		if win.Name != name {
			continue
		}
		for _, f := range win.Files {
			if f.Kind != "pprof" {
				continue
			}
			fh, err := os.Open(f.Path)
			if err != nil {
				return nil, fmt.Errorf("opening %s: %w", name, err)
			}
			defer fh.Close()
			b, err := io.ReadAll(io.LimitReader(fh, maxProfileBytes+1))
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", name, err)
			}
			if len(b) > maxProfileBytes {
				return nil, fmt.Errorf("%s is over %d bytes", name, maxProfileBytes)
			}
			p, err := profile.ParseData(b)
			if err != nil {
				return nil, fmt.Errorf("parsing %s: %w", name, err)
			}
			return p, nil
		}
		return nil, fmt.Errorf("window %s has no pprof file", name)
	}
	return nil, fmt.Errorf("no window %q", name)
}

func (a *Agent) handleFlamegraphDiff(w http.ResponseWriter, r *http.Request) {
	an, bn := r.URL.Query().Get("a"), r.URL.Query().Get("b")
	if an == "" || bn == "" {
		http.Error(w, "diff needs ?a=WINDOW&b=WINDOW", http.StatusBadRequest)
		return
	}
	pa, err := a.windowProfile(an)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	pb, err := a.windowProfile(bn)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	var buf bytes.Buffer
	if err := flamegraph.WriteDiffSVG(&buf, pa, pb, flamegraph.SVGOptions{Title: "Diff " + an + " → " + bn}); err != nil {
		http.Error(w, "rendering the diff: "+err.Error(), http.StatusUnprocessableEntity)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Write(buf.Bytes())
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
