package wire

// The JSON shapes of the HTTP/3 API (DESIGN.md: /v1/decide, /v1/outcomes,
// /v1/state). They mirror the protobuf messages field for field; plain
// structs rather than protojson because protojson writes 64-bit integers as
// strings and camelCase names, which is not the documented shape.

// TaskJSON is one task of a /v1/decide body.
type TaskJSON struct {
	ID     uint64  `json:"id"`
	Class  string  `json:"class"`
	SLAMs  float32 `json:"sla_ms"`
	CostMs float32 `json:"cost_ms"`
	Tenant string  `json:"tenant"`
}

// DecideRequestJSON is the body of POST /v1/decide (and of `triage decide` on stdin).
type DecideRequestJSON struct {
	Tasks []TaskJSON `json:"tasks"`
}

// DecisionJSON is one decision of a /v1/decide answer.
type DecisionJSON struct {
	ID       uint64     `json:"id"`
	Priority uint32     `json:"priority"`
	Q        [5]float32 `json:"q"`
}

// DecideResponseJSON is the answer of POST /v1/decide.
type DecideResponseJSON struct {
	Decisions  []DecisionJSON `json:"decisions"`
	Model      string         `json:"model"`
	StateEpoch uint64         `json:"state_epoch"`
}

// OutcomeJSON is one outcome of a /v1/outcomes body.
type OutcomeJSON struct {
	ID        uint64  `json:"id"`
	LatencyMs float32 `json:"latency_ms"`
	SLAMet    bool    `json:"sla_met"`
	ServiceMs float32 `json:"service_ms,omitempty"` // start to finish; 0 or absent = unknown
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
}

// ErrorJSON is the body of every 4xx/5xx answer.
type ErrorJSON struct {
	Error string `json:"error"`
}

// TasksFromJSON converts a decoded /v1/decide body into wire tasks.
func TasksFromJSON(in []TaskJSON) []*Task {
	out := make([]*Task, len(in))
	for i := range in {
		t := &in[i]
		out[i] = &Task{Id: t.ID, Class: t.Class, SlaMs: t.SLAMs, CostMs: t.CostMs, Tenant: t.Tenant}
	}
	return out
}

// DecisionsToJSON converts decisions to their JSON shape.
func DecisionsToJSON(in []*Decision) []DecisionJSON {
	out := make([]DecisionJSON, len(in))
	for i, d := range in {
		out[i] = DecisionJSON{ID: d.GetId(), Priority: d.GetPriority()}
		copy(out[i].Q[:], d.GetQ())
	}
	return out
}

// OutcomesFromJSON converts a decoded /v1/outcomes body into wire outcomes.
func OutcomesFromJSON(in []OutcomeJSON) []*Outcome {
	out := make([]*Outcome, len(in))
	for i, o := range in {
		out[i] = &Outcome{Id: o.ID, LatencyMs: o.LatencyMs, SlaMet: o.SLAMet, ServiceMs: o.ServiceMs}
	}
	return out
}

// NodeStateToJSON converts a snapshot to its JSON shape.
func NodeStateToJSON(s *NodeState) NodeStateJSON {
	return NodeStateJSON{
		Epoch: s.GetEpoch(), UnixNano: s.GetUnixNano(), Features: s.GetFeatures(), Sources: s.GetSources(),
		RunqP50Us: s.GetRunqP50Us(), RunqP99Us: s.GetRunqP99Us(), QueueLen: s.GetQueueLen(),
		QueueCap: s.GetQueueCap(), CPUUtil: s.GetCpuUtil(), Model: s.GetModel(), Node: s.GetNode(),
	}
}
