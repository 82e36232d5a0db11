package serve

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/triage-agent/triage/wire"
)

// httpHandler is the HTTP/3 JSON API of DESIGN.md. Bodies are bounded by
// MaxHTTPBodyBytes and decoded strictly (unknown fields and trailing data are
// errors); every error is JSON {"error": "..."} with a 4xx status (5xx only
// when the backend fails).
func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/decide", only("POST", s.httpDecide))
	mux.HandleFunc("/v1/outcomes", only("POST", s.httpOutcomes))
	mux.HandleFunc("/v1/state", only("GET", s.httpState))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s (have POST /v1/decide, POST /v1/outcomes, GET /v1/state)", r.Method, r.URL.Path))
	})
	if len(s.cfg.Tokens) == 0 {
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.bearerOK(r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="triage"`)
			writeJSONError(w, http.StatusUnauthorized, "missing or invalid bearer token")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// only answers 405 with a JSON error for any other method (the mux's own
// 405 is plain text, and the catch-all route would turn it into a 404).
func only(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeJSONError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: use %s", r.Method, r.URL.Path, method))
			return
		}
		h(w, r)
	}
}

func (s *Server) bearerOK(h string) bool {
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	good := 0
	for _, t := range s.cfg.Tokens {
		good |= subtle.ConstantTimeCompare([]byte(tok), []byte(t))
	}
	return good == 1
}

func (s *Server) httpDecide(w http.ResponseWriter, r *http.Request) {
	var req wire.DecideRequestJSON
	if !s.readJSON(w, r, &req) {
		return
	}
	if len(req.Tasks) == 0 {
		writeJSONError(w, http.StatusBadRequest, `body has no tasks: want {"tasks":[{"id":1,"class":"...","sla_ms":50,"cost_ms":5,"tenant":"..."}]}`)
		return
	}
	if len(req.Tasks) > s.cfg.MaxBatch {
		writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("%d tasks, limit %d", len(req.Tasks), s.cfg.MaxBatch))
		return
	}
	decisions, model, epoch, err := s.backend.Decide(r.Context(), wire.TasksFromJSON(req.Tasks))
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, "deciding: "+err.Error())
		return
	}
	s.stats.Requests.Add(1)
	s.stats.Decisions.Add(int64(len(decisions)))
	writeJSON(w, http.StatusOK, wire.DecideResponseJSON{Decisions: wire.DecisionsToJSON(decisions), Model: model, StateEpoch: epoch})
}

func (s *Server) httpOutcomes(w http.ResponseWriter, r *http.Request) {
	var rep wire.OutcomeReportJSON
	if !s.readJSON(w, r, &rep) {
		return
	}
	if len(rep.Outcomes) > s.cfg.MaxBatch {
		writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("%d outcomes, limit %d", len(rep.Outcomes), s.cfg.MaxBatch))
		return
	}
	if err := s.backend.ReportOutcomes(r.Context(), wire.OutcomesFromJSON(rep.Outcomes)); err != nil {
		writeJSONError(w, http.StatusInternalServerError, "reporting outcomes: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, wire.OutcomesAcceptedJSON{Accepted: len(rep.Outcomes)})
}

func (s *Server) httpState(w http.ResponseWriter, r *http.Request) {
	st := s.backend.State()
	if st == nil {
		writeJSONError(w, http.StatusServiceUnavailable, "no node state yet")
		return
	}
	writeJSON(w, http.StatusOK, wire.NodeStateToJSON(st))
}

// readJSON decodes a bounded, strict JSON body into v, answering the error
// itself when it fails.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		writeJSONError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json, not "+ct)
		return false
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxHTTPBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", s.cfg.MaxHTTPBodyBytes))
			return false
		}
		writeJSONError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		writeJSONError(w, http.StatusBadRequest, "invalid JSON body: trailing data after the object")
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, wire.ErrorJSON{Error: msg})
}
