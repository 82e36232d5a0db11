package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestJSONShapes(t *testing.T) {
	var req DecideRequestJSON
	if err := json.Unmarshal([]byte(`{"tasks":[{"id":7,"class":"c","sla_ms":12.5,"cost_ms":1,"tenant":"x"}]}`), &req); err != nil {
		t.Fatal(err)
	}
	tasks, err := TasksFromJSON(req.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0].GetId() != 7 || tasks[0].GetSlaMs() != 12.5 || tasks[0].GetTenant() != "x" {
		t.Fatalf("tasks %v", tasks)
	}
	out, _ := json.Marshal(DecideResponseJSON{Decisions: DecisionsToJSON([]*Decision{{Id: 7, Priority: 3, Q: []float32{1, 2, 3, 4, 5}}}), Model: "m", StateEpoch: 2, BackgroundReserve: 0.5, BackgroundShortMs: 20, BackgroundUrgentSLAMs: 80})
	if string(out) != `{"decisions":[{"id":7,"priority":3,"q":[1,2,3,4,5]}],"model":"m","state_epoch":2,"background_reserve":0.5,"background_short_ms":20,"background_urgent_sla_ms":80}` {
		t.Fatalf("answer %s", out)
	}
}

// A JSON id is a string or an integer, goes into the matching protobuf
// field, and comes back in the form it came in.
func TestJSONTaskIDsRoundTrip(t *testing.T) {
	uuid := "3f2a9c1e-7b4d-4e8a-9f10-2c6d8e4b1a77"
	body := `{"tasks":[{"id":"` + uuid + `"},{"id":18446744073709551615},{"id":"42"},{"id":0}]}`
	var req DecideRequestJSON
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	tasks, err := TasksFromJSON(req.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{uuid, "18446744073709551615", "42", "0"}
	for i, task := range tasks {
		if got := TaskID(task); got != wantKeys[i] {
			t.Errorf("task %d: id %q, want %q", i, got, wantKeys[i])
		}
	}
	if tasks[0].GetTaskId() != uuid || tasks[1].GetId() != 1<<64-1 || tasks[1].GetTaskId() != "" || tasks[2].GetTaskId() != "42" {
		t.Fatalf("protobuf fields: %v", tasks)
	}
	// The agent echoes both fields; JSON writes each in its own form.
	ds := make([]*Decision, len(tasks))
	for i, task := range tasks {
		ds[i] = &Decision{Id: task.GetId(), TaskId: task.GetTaskId(), Priority: 1, Q: make([]float32, 5)}
	}
	out, err := json.Marshal(DecisionsToJSON(ds))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id":"` + uuid + `"`, `"id":18446744073709551615`, `"id":"42"`, `"id":0`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("answer %s lacks %s", out, want)
		}
	}
	back, err := json.Marshal(TasksToJSON(tasks))
	if err != nil || !strings.Contains(string(back), `{"id":"42",`) {
		t.Fatalf("TasksToJSON: %s %v", back, err)
	}
}

func TestJSONTaskIDRefused(t *testing.T) {
	for name, body := range map[string]string{
		"empty string": `{"tasks":[{"id":""}]}`,
		"too long":     `{"tasks":[{"id":"` + strings.Repeat("x", MaxTaskIDBytes+1) + `"}]}`,
		"negative":     `{"tasks":[{"id":-1}]}`,
		"fraction":     `{"tasks":[{"id":1.5}]}`,
		"exponent":     `{"tasks":[{"id":1e3}]}`,
		"past 64 bits": `{"tasks":[{"id":18446744073709551616}]}`,
		"object":       `{"tasks":[{"id":{}}]}`,
		"null":         `{"tasks":[{"id":null}]}`,
		"missing":      `{"tasks":[{"class":"c"}]}`,
	} {
		var req DecideRequestJSON
		err := json.Unmarshal([]byte(body), &req)
		if err == nil {
			_, err = TasksFromJSON(req.Tasks)
		}
		if !errors.Is(err, ErrBadTaskID) {
			t.Errorf("%s: err = %v, want ErrBadTaskID", name, err)
		}
	}
	// 128 bytes is the limit, not past it.
	var req DecideRequestJSON
	if err := json.Unmarshal([]byte(`{"tasks":[{"id":"`+strings.Repeat("é", MaxTaskIDBytes/2)+`"}]}`), &req); err != nil {
		t.Fatalf("a %d-byte id: %v", MaxTaskIDBytes, err)
	}
	var rep OutcomeReportJSON
	if err := json.Unmarshal([]byte(`{"outcomes":[{"latency_ms":3}]}`), &rep); err != nil {
		t.Fatal(err)
	}
	if _, err := OutcomesFromJSON(rep.Outcomes); !errors.Is(err, ErrBadTaskID) || !strings.Contains(err.Error(), "outcome 0 has no id") {
		t.Fatalf("outcome without id: %v", err)
	}
}

func TestTaskIDRules(t *testing.T) {
	if got := TaskID(&Task{Id: 7, TaskId: "seven"}); got != "seven" {
		t.Errorf("task_id must win over id, got %q", got)
	}
	if got := TaskID(&Outcome{Id: 7}); got != "7" {
		t.Errorf("numeric id: %q", got)
	}
	if err := CheckTaskID(&Task{TaskId: strings.Repeat("a", MaxTaskIDBytes)}); err != nil {
		t.Errorf("128 bytes refused: %v", err)
	}
	err := CheckTaskID(&Task{TaskId: strings.Repeat("a", MaxTaskIDBytes+1)})
	if !errors.Is(err, ErrBadTaskID) || !strings.Contains(err.Error(), "129 bytes, at most 128") {
		t.Errorf("129 bytes: %v", err)
	}
	if err := CheckOutcome(&Outcome{TaskId: strings.Repeat("a", 200), LatencyMs: 1}); !errors.Is(err, ErrBadTaskID) {
		t.Errorf("outcome with a long id: %v", err)
	}
}
