package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// The JSON shapes of the HTTP API (DESIGN.md: /v1/decide, /v1/outcomes,
// /v1/state), served on HTTP/3, HTTP/2 and HTTP/1.1 alike. They mirror the
// protobuf messages field for field; plain structs rather than protojson
// because protojson writes 64-bit integers as strings and camelCase names,
// which is not the documented shape.

// TaskIDJSON is the "id" of a task, decision or outcome in a JSON body: a
// string of 1..MaxTaskIDBytes bytes, or a non-negative integer that fits 64
// bits (what clients of the first API send). It is written back in the form
// it came in, so a client gets its own id back exactly. The zero value is
// "no id", which the conversions below refuse.
type TaskIDJSON struct {
	ID      string // the id; decimal digits when Numeric
	Numeric bool   // it was (or is to be written as) a JSON number
}

// StringID is a string task id.
func StringID(s string) TaskIDJSON { return TaskIDJSON{ID: s} }

// NumericID is a numeric task id.
func NumericID(n uint64) TaskIDJSON { return TaskIDJSON{ID: strconv.FormatUint(n, 10), Numeric: true} }

// MarshalJSON writes the id as a number or a string, as it came.
func (id TaskIDJSON) MarshalJSON() ([]byte, error) {
	if id.Numeric {
		if _, err := strconv.ParseUint(id.ID, 10, 64); err != nil {
			return nil, fmt.Errorf("numeric task id %q: %w", id.ID, err)
		}
		return []byte(id.ID), nil
	}
	return json.Marshal(id.ID)
}

// UnmarshalJSON takes a string of 1..MaxTaskIDBytes bytes or a JSON integer
// in 0..2^64-1 (no sign, fraction or exponent).
func (id *TaskIDJSON) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "" {
			return fmt.Errorf("%w: empty (an id is 1..%d bytes)", ErrBadTaskID, MaxTaskIDBytes)
		}
		if len(s) > MaxTaskIDBytes {
			return fmt.Errorf("%w: %d bytes, at most %d", ErrBadTaskID, len(s), MaxTaskIDBytes)
		}
		*id = TaskIDJSON{ID: s}
		return nil
	}
	if _, err := strconv.ParseUint(string(b), 10, 64); err != nil {
		return fmt.Errorf("%w: %.40s is neither a string nor an integer in 0..2^64-1", ErrBadTaskID, b)
	}
	*id = TaskIDJSON{ID: string(b), Numeric: true}
	return nil
}

// set reports whether the id was given.
func (id TaskIDJSON) set() bool { return id.ID != "" }

// toWire writes the id into a message's two id fields.
func (id TaskIDJSON) toWire() (num uint64, str string) {
	if id.Numeric {
		n, _ := strconv.ParseUint(id.ID, 10, 64) // checked when decoded
		return n, ""
	}
	return 0, id.ID
}

// TaskIDToJSON is m's id in the form it came: its task_id as a string when
// set, else its numeric id as a number.
func TaskIDToJSON(m Identified) TaskIDJSON {
	if s := m.GetTaskId(); s != "" {
		return StringID(s)
	}
	return NumericID(m.GetId())
}

// TaskJSON is one task of a /v1/decide body.
type TaskJSON struct {
	ID     TaskIDJSON `json:"id"`
	Class  string     `json:"class"`
	SLAMs  float32    `json:"sla_ms"`
	CostMs float32    `json:"cost_ms"`
	Tenant string     `json:"tenant"`
}

// DecideRequestJSON is the body of POST /v1/decide (and of `triage decide` on stdin).
type DecideRequestJSON struct {
	Tasks []TaskJSON `json:"tasks"`
}

// DecisionJSON is one decision of a /v1/decide answer.
type DecisionJSON struct {
	ID       TaskIDJSON `json:"id"`
	Priority uint32     `json:"priority"`
	Q        [5]float32 `json:"q"`
}

// DecideResponseJSON is the answer of POST /v1/decide.
type DecideResponseJSON struct {
	Decisions  []DecisionJSON `json:"decisions"`
	Model      string         `json:"model"`
	StateEpoch uint64         `json:"state_epoch"`
	// BackgroundReserve is DecideResponse.background_reserve.
	BackgroundReserve float32 `json:"background_reserve"`
	// BackgroundShortMs is DecideResponse.background_short_ms.
	BackgroundShortMs float32 `json:"background_short_ms"`
	// BackgroundUrgentSLAMs is DecideResponse.background_urgent_sla_ms.
	BackgroundUrgentSLAMs float32 `json:"background_urgent_sla_ms"`
}

// OutcomeJSON is one outcome of a /v1/outcomes body.
type OutcomeJSON struct {
	ID        TaskIDJSON `json:"id"`
	LatencyMs float32    `json:"latency_ms"`
	SLAMet    bool       `json:"sla_met"`
	ServiceMs float32    `json:"service_ms,omitempty"` // start to finish; 0 or absent = unknown
}

// OutcomeReportJSON is the body of POST /v1/outcomes.
type OutcomeReportJSON struct {
	Outcomes []OutcomeJSON `json:"outcomes"`
}

// OutcomesAcceptedJSON answers POST /v1/outcomes.
type OutcomesAcceptedJSON struct {
	Accepted int `json:"accepted"`
}

// NodeStateJSON is the answer of GET /v1/state.
type NodeStateJSON struct {
	Epoch     uint64    `json:"epoch"`
	UnixNano  int64     `json:"unix_nano"`
	Features  []float32 `json:"features"`
	Sources   []string  `json:"sources"`
	RunqP50Us float32   `json:"runq_p50_us"`
	RunqP99Us float32   `json:"runq_p99_us"`
	QueueLen  uint32    `json:"queue_len"`
	QueueCap  uint32    `json:"queue_cap"`
	CPUUtil   float32   `json:"cpu_util"`
	Model     string    `json:"model"`
	Node      string    `json:"node"`
	// BackgroundReserve is NodeState.background_reserve.
	BackgroundReserve float32 `json:"background_reserve"`
	// BackgroundShortMs is NodeState.background_short_ms.
	BackgroundShortMs float32 `json:"background_short_ms"`
	// BackgroundUrgentSLAMs is NodeState.background_urgent_sla_ms.
	BackgroundUrgentSLAMs float32 `json:"background_urgent_sla_ms"`
}

// ErrorJSON is the body of every 4xx/5xx answer.
type ErrorJSON struct {
	Error string `json:"error"`
}

// TasksFromJSON converts a decoded /v1/decide body into wire tasks; a task
// without an id is an error (ErrBadTaskID) naming its index.
func TasksFromJSON(in []TaskJSON) ([]*Task, error) {
	out := make([]*Task, len(in))
	for i := range in {
		t := &in[i]
		if !t.ID.set() {
			return nil, fmt.Errorf("%w: task %d has no id", ErrBadTaskID, i)
		}
		num, str := t.ID.toWire()
		out[i] = &Task{Id: num, TaskId: str, Class: t.Class, SlaMs: t.SLAMs, CostMs: t.CostMs, Tenant: t.Tenant}
	}
	return out, nil
}

// TasksToJSON converts wire tasks to their JSON shape (ids as given).
func TasksToJSON(in []*Task) []TaskJSON {
	out := make([]TaskJSON, len(in))
	for i, t := range in {
		out[i] = TaskJSON{ID: TaskIDToJSON(t), Class: t.GetClass(), SLAMs: t.GetSlaMs(), CostMs: t.GetCostMs(), Tenant: t.GetTenant()}
	}
	return out
}

// DecisionsToJSON converts decisions to their JSON shape, each id in the
// form its task gave it.
func DecisionsToJSON(in []*Decision) []DecisionJSON {
	out := make([]DecisionJSON, len(in))
	for i, d := range in {
		out[i] = DecisionJSON{ID: TaskIDToJSON(d), Priority: d.GetPriority()}
		copy(out[i].Q[:], d.GetQ())
	}
	return out
}

// OutcomesFromJSON converts a decoded /v1/outcomes body into wire outcomes;
// an outcome without an id is an error (ErrBadTaskID) naming its index.
func OutcomesFromJSON(in []OutcomeJSON) ([]*Outcome, error) {
	out := make([]*Outcome, len(in))
	for i, o := range in {
		if !o.ID.set() {
			return nil, fmt.Errorf("%w: outcome %d has no id", ErrBadTaskID, i)
		}
		num, str := o.ID.toWire()
		out[i] = &Outcome{Id: num, TaskId: str, LatencyMs: o.LatencyMs, SlaMet: o.SLAMet, ServiceMs: o.ServiceMs}
	}
	return out, nil
}

// NodeStateToJSON converts a snapshot to its JSON shape.
func NodeStateToJSON(s *NodeState) NodeStateJSON {
	return NodeStateJSON{
		Epoch: s.GetEpoch(), UnixNano: s.GetUnixNano(), Features: s.GetFeatures(), Sources: s.GetSources(),
		RunqP50Us: s.GetRunqP50Us(), RunqP99Us: s.GetRunqP99Us(), QueueLen: s.GetQueueLen(),
		QueueCap: s.GetQueueCap(), CPUUtil: s.GetCpuUtil(), Model: s.GetModel(), Node: s.GetNode(),
		BackgroundReserve: s.GetBackgroundReserve(), BackgroundShortMs: s.GetBackgroundShortMs(),
		BackgroundUrgentSLAMs: s.GetBackgroundUrgentSlaMs(),
	}
}
