package wire

import (
	"encoding/json"
	"testing"
)

func TestJSONShapes(t *testing.T) {
	var req DecideRequestJSON
	if err := json.Unmarshal([]byte(`{"tasks":[{"id":7,"class":"c","sla_ms":12.5,"cost_ms":1,"tenant":"x"}]}`), &req); err != nil {
		t.Fatal(err)
	}
	tasks := TasksFromJSON(req.Tasks)
	if len(tasks) != 1 || tasks[0].GetId() != 7 || tasks[0].GetSlaMs() != 12.5 || tasks[0].GetTenant() != "x" {
		t.Fatalf("tasks %v", tasks)
	}
	out, _ := json.Marshal(DecideResponseJSON{Decisions: DecisionsToJSON([]*Decision{{Id: 7, Priority: 3, Q: []float32{1, 2, 3, 4, 5}}}), Model: "m", StateEpoch: 2})
	if string(out) != `{"decisions":[{"id":7,"priority":3,"q":[1,2,3,4,5]}],"model":"m","state_epoch":2}` {
		t.Fatalf("answer %s", out)
	}
}
