package serve

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/triage-agent/triage/wire"
)

// openAPIDoc is the OpenAPI 3.1 description of the JSON API, served at
// GET /v1/openapi.json (a test checks it against the live server).
//
//go:embed openapi.json
var openAPIDoc []byte

// httpHandler is the JSON API of DESIGN.md, one handler for HTTP/3,
// HTTP/2 and HTTP/1.1 (the protocol label comes from the request). Bodies
// are bounded by MaxHTTPBodyBytes and decoded strictly (unknown fields and
// trailing data are errors); every error is JSON {"error": "..."} with a
// 4xx status (5xx only when the backend fails or has no state yet).
func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/decide", s.only("POST", methodDecide, s.httpDecide))
	mux.HandleFunc("/v1/outcomes", s.only("POST", methodOutcomes, s.httpOutcomes))
	mux.HandleFunc("/v1/state", s.only("GET", methodState, s.httpState))
	mux.HandleFunc("/v1/openapi.json", s.only("GET", methodOpenAPI, s.httpOpenAPI))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.countCall(httpProtocol(r), methodOther, wire.CodeUnsupported)
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s (have POST /v1/decide, POST /v1/outcomes, GET /v1/state, GET /v1/openapi.json)", r.Method, r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorizedHeader(r.Header.Get("Authorization")) {
			s.countCall(httpProtocol(r), routeMethod(r.URL.Path), wire.CodeUnauthenticated)
			w.Header().Set("WWW-Authenticate", `Bearer realm="triage"`)
			writeJSONError(w, http.StatusUnauthorized, "missing or invalid bearer token")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// httpProtocol is the protocol label of an HTTP request.
func httpProtocol(r *http.Request) Protocol {
	switch r.ProtoMajor {
	case 3:
		return ProtocolHTTP3
	case 2:
		return ProtocolHTTP2
	}
	return ProtocolHTTP1
}

func routeMethod(path string) string {
	switch path {
	case "/v1/decide":
		return methodDecide
	case "/v1/outcomes":
		return methodOutcomes
	case "/v1/state":
		return methodState
	case "/v1/openapi.json":
		return methodOpenAPI
	}
	return methodOther
}

// only answers 405 with a JSON error for any other method (the mux's own
// 405 is plain text, and the catch-all route would turn it into a 404).
func (s *Server) only(method, name string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			s.countCall(httpProtocol(r), name, wire.CodeUnsupported)
			w.Header().Set("Allow", method)
			writeJSONError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: use %s", r.Method, r.URL.Path, method))
			return
		}
		h(w, r)
	}
}

// httpStatus maps a refusal's code to its HTTP status.
func httpStatus(code wire.Code) int {
	switch code {
	case wire.CodeBatchTooLarge, wire.CodeBodyTooLarge, wire.CodeFrameTooLarge:
		return http.StatusRequestEntityTooLarge
	case wire.CodeInvalidArgument, wire.CodeMalformed:
		return http.StatusBadRequest
	case wire.CodeUnauthenticated:
		return http.StatusUnauthorized
	case wire.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func (s *Server) httpDecide(w http.ResponseWriter, r *http.Request) {
	serveJSONCall(s, w, r, methodDecide, decideInput, s.decideCall, func(resp *wire.DecideResponse) any {
		return wire.DecideResponseJSON{Decisions: wire.DecisionsToJSON(resp.Decisions), Model: resp.Model, StateEpoch: resp.StateEpoch, BackgroundReserve: resp.BackgroundReserve, BackgroundShortMs: resp.BackgroundShortMs, BackgroundUrgentSLAMs: resp.BackgroundUrgentSlaMs}
	})
}

// errNoTasks refuses a decide body without tasks.
var errNoTasks = errors.New(`body has no tasks: want {"tasks":[{"id":"task-1","class":"...","sla_ms":50,"cost_ms":5,"tenant":"..."}]}`)

// decideInput is the tasks of a decide body, at least one.
func decideInput(req *wire.DecideRequestJSON) ([]*wire.Task, error) {
	if len(req.Tasks) == 0 {
		return nil, errNoTasks
	}
	return wire.TasksFromJSON(req.Tasks)
}

func (s *Server) httpOutcomes(w http.ResponseWriter, r *http.Request) {
	serveJSONCall(s, w, r, methodOutcomes, func(rep *wire.OutcomeReportJSON) ([]*wire.Outcome, error) { return wire.OutcomesFromJSON(rep.Outcomes) },
		s.outcomesCall, func(n int) any { return wire.OutcomesAcceptedJSON{Accepted: n} })
}

// serveJSONCall is the path of every JSON call with a body over HTTP: the
// body is read strictly (readJSON), input turns it into the call's
// argument (an error there is an invalid argument: counted, and answered
// 400 with its text), call makes the call (its error answered by
// writeCallError), and answer is the JSON a call that succeeded returns
// with 200.
func serveJSONCall[Body, In, Out any](s *Server, w http.ResponseWriter, r *http.Request, method string,
	input func(*Body) (In, error), call func(context.Context, Protocol, In) (Out, *callError), answer func(Out) any) {
	p := httpProtocol(r)
	var body Body
	if !s.readJSON(w, r, p, method, &body) {
		return
	}
	in, err := input(&body)
	if err != nil {
		s.refuseHTTP(w, p, method, wire.CodeInvalidArgument, http.StatusBadRequest, err.Error())
		return
	}
	out, cerr := call(r.Context(), p, in)
	if cerr != nil {
		writeCallError(w, cerr)
		return
	}
	writeJSON(w, http.StatusOK, answer(out))
}

func (s *Server) httpState(w http.ResponseWriter, r *http.Request) {
	st, cerr := s.stateCall(httpProtocol(r))
	if cerr != nil {
		writeCallError(w, cerr)
		return
	}
	writeJSON(w, http.StatusOK, wire.NodeStateToJSON(st))
}

func (s *Server) httpOpenAPI(w http.ResponseWriter, r *http.Request) {
	s.countCall(httpProtocol(r), methodOpenAPI, wire.CodeOK)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(openAPIDoc)
}

// readJSON decodes a bounded, strict JSON body into v, answering (and
// counting) the error itself when it fails.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, p Protocol, method string, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		s.refuseHTTP(w, p, method, wire.CodeMalformed, http.StatusUnsupportedMediaType, "Content-Type must be application/json, not "+ct)
		return false
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxHTTPBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.refuseHTTP(w, p, method, wire.CodeBodyTooLarge, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", s.cfg.MaxHTTPBodyBytes))
			return false
		}
		s.refuseHTTP(w, p, method, wire.CodeMalformed, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		s.refuseHTTP(w, p, method, wire.CodeMalformed, http.StatusBadRequest, "invalid JSON body: trailing data after the object")
		return false
	}
	return true
}

// refuseHTTP turns an HTTP call away before it runs: counted under code
// (as every call is), answered with status and msg.
func (s *Server) refuseHTTP(w http.ResponseWriter, p Protocol, method string, code wire.Code, status int, msg string) {
	s.countCall(p, method, code)
	writeJSONError(w, status, msg)
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

// writeCallError answers a call refused or failed (already counted by the
// call): its message under its code's HTTP status, as grpcStatus does for
// gRPC.
func writeCallError(w http.ResponseWriter, err *callError) {
	writeJSONError(w, httpStatus(err.code), err.msg)
}
