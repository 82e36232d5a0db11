package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/agent/state"
	"github.com/triage-agent/triage/policy"
)

// adminHandler is the admin HTTP server (default :9090):
//
//	/metrics          Prometheus
//	/healthz          200 while the process serves
//	/readyz           200 once a model is loaded and the probes settled; the body names each feature's source
//	/debug/pprof/     the agent's own Go profiles
//	/flamegraphs      the recorded windows, their SVGs, a diff between any two
//	/admin/shadow     GET: the shadow model's comparison (JSON)
//	/admin/promote    POST: hot-swap the shadow model in
//
// Who may call which is adminAccess's rule (docs/operating.md has the
// threat model).
func (a *Agent) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.metrics.reg, promhttp.HandlerOpts{ErrorLog: nil}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", a.handleReady)
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /flamegraphs", a.handleFlamegraphs)
	mux.HandleFunc("GET /flamegraphs/files/{file}", a.handleFlamegraphFile)
	mux.HandleFunc("GET /flamegraphs/diff", a.handleFlamegraphDiff)
	mux.HandleFunc("GET /admin/shadow", a.handleShadow)
	mux.HandleFunc("POST /admin/promote", a.handlePromote)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>triage agent</title><h1>triage agent</h1><ul>
<li><a href="/metrics">/metrics</a><li><a href="/readyz">/readyz</a><li><a href="/flamegraphs">/flamegraphs</a>
<li><a href="/admin/shadow">/admin/shadow</a><li><a href="/debug/pprof/">/debug/pprof/</a></ul>`)
	})
	return mux
}

// readiness says whether the agent is ready and, either way, why.
func (a *Agent) readiness() (bool, string) {
	var b strings.Builder
	ready := true
	if a.model == nil {
		ready = false
		b.WriteString("model: not loaded\n")
	} else {
		fmt.Fprintf(&b, "model: %s (%s, %s)\n", a.model.Version(), a.model.Device(), policy.StateSchema)
	}
	// The collector returns once every probe has attached or fallen back
	// and it holds a first sample: one snapshot read means settled.
	node := a.node.Load()
	if node == nil {
		ready = false
		b.WriteString("probes: settling\n")
	} else {
		b.WriteString("probes: settled\n")
	}
	if !a.ready.Load() {
		ready = false
		b.WriteString("serving: not yet\n")
	}
	if node != nil {
		var fallback []string
		for i, f := range node.features {
			fmt.Fprintf(&b, "feature %-18s %s\n", policy.FeatureNames[i], f.Source)
			if f.Source == state.SourceProcfs || f.Source == state.SourceNone {
				fallback = append(fallback, policy.FeatureNames[i]+"="+string(f.Source))
			}
		}
		for _, p := range node.signals.Probes {
			shown, detail := "attached", p.Tier
			if !p.Attached {
				shown, detail = "unavailable", p.Reason
			}
			fmt.Fprintf(&b, "probe %-20s %s %s\n", p.Name, shown, detail)
		}
		if len(fallback) > 0 {
			fmt.Fprintf(&b, "degraded: %s\n", strings.Join(fallback, " "))
		}
	}
	return ready, b.String()
}

func (a *Agent) handleReady(w http.ResponseWriter, r *http.Request) {
	ok, body := a.readiness()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if ok {
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "ready\n"+body)
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprint(w, "not ready\n"+body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (a *Agent) handleShadow(w http.ResponseWriter, r *http.Request) {
	if a.shadow == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no shadow model (start the agent with --shadow-model FILE)"})
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Serving string      `json:"serving"`
		Shadow  ShadowStats `json:"shadow"`
	}{a.model.Version(), a.shadow.Stats()})
}

// ErrNoShadow is returned by Promote when no shadow model runs.
var ErrNoShadow = errors.New("agent: no shadow model to promote")

// Promote hot-swaps the shadow model in. With --model set, the candidate is
// first written over the model file (by rename), so a restart serves what
// was promoted and the file watch agrees with the running model.
func (a *Agent) Promote() (string, error) {
	if a.shadow == nil {
		return "", ErrNoShadow
	}
	b, err := a.shadow.modelBytes()
	if err != nil {
		return "", err
	}
	if err := a.model.ReloadBytes(a.shadow.path, b); err != nil {
		return "", fmt.Errorf("promoting %s: %w", a.shadow.path, err)
	}
	if a.cfg.ModelPath != "" {
		tmp := filepath.Join(filepath.Dir(a.cfg.ModelPath), "."+filepath.Base(a.cfg.ModelPath)+".promote")
		if err := os.WriteFile(tmp, b, 0o644); err == nil {
			if err := os.Rename(tmp, a.cfg.ModelPath); err != nil {
				a.log.Warn("promoted model not persisted to --model", "path", a.cfg.ModelPath, "err", err)
			}
		} else {
			a.log.Warn("promoted model not persisted to --model", "path", a.cfg.ModelPath, "err", err)
		}
	}
	v := a.model.Version()
	a.log.Info("shadow model promoted", "model", v, "from", a.shadow.path)
	return v, nil
}

func (a *Agent) handlePromote(w http.ResponseWriter, r *http.Request) {
	v, err := a.Promote()
	switch {
	case errors.Is(err, ErrNoShadow):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
	case errors.Is(err, policy.ErrUnchanged):
		writeJSON(w, http.StatusConflict, map[string]string{"error": "the shadow model is already serving"})
	case err != nil:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": err.Error(), "serving": a.model.Version()})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"serving": v})
	}
}

var _ serve.Backend = (*Agent)(nil)
