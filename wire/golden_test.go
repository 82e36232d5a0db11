package wire

import (
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

var update = flag.Bool("update", false, "rewrite testdata/endpoint/*.golden")

// The protobuf bytes of a few messages are pinned: a schema change that
// breaks peers in other languages shows up here, not in production.
func TestSchemaGolden(t *testing.T) {
	msgs := map[string]proto.Message{
		"decide_request":  decideEnv(2),
		"decide_response": &Envelope{Body: &Envelope_DecideResponse{DecideResponse: &DecideResponse{ReqId: 9, Decisions: []*Decision{{Id: 1, Priority: 4, Q: []float32{0, 0.5, 1, 1.5, 2}}}, Model: "bootstrap-0", StateEpoch: 77}}},
		"node_state":      snapshot(5),
		"hello":           &Envelope{Body: &Envelope_Hello{Hello: &Hello{Version: ProtocolVersion, Token: "t0ken"}}},
		"decision_table":  &Envelope{Body: &Envelope_DecisionTable{DecisionTable: validTable()}},
		"local_report": &Envelope{Body: &Envelope_LocalReport{LocalReport: &LocalReport{ReqId: 3, Decisions: []*LocalDecision{
			{Task: &Task{TaskId: "job-1", Class: "a", SlaMs: 20, CostMs: 1.5}, Priority: 4, TableEpoch: 7, Cell: 5, AgeUs: 1200}}}}},
	}
	for name, m := range msgs {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got := hex.EncodeToString(b) + "\n"
		path := filepath.Join("..", "testdata", "endpoint", name+".golden")
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./wire -update)", err)
		}
		if strings.TrimSpace(string(want)) != strings.TrimSpace(got) {
			t.Errorf("%s: encoding changed:\n got %s\nwant %s", name, got, want)
		}
	}
}
