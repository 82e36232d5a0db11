package client

import (
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/triage-agent/triage/wire"
)

// FuzzDecodeTable feeds the table decoder any protobuf payload and looks
// up any task in what it accepts: it must refuse or accept without
// panicking, and an accepted table never answers a level outside 0..4.
// The seed corpus (testdata/fuzz/FuzzDecodeTable) holds tables the agent
// builds and broken ones.
func FuzzDecodeTable(f *testing.F) {
	good, err := proto.Marshal(testTable())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, "a", float32(20), float32(1.5), float32(2))
	f.Fuzz(func(t *testing.T, payload []byte, class string, sla, cost, queue float32) {
		var msg wire.DecisionTable
		if err := proto.Unmarshal(payload, &msg); err != nil {
			return
		}
		tb, err := decodeTable(&msg, time.Now())
		if err != nil {
			return
		}
		tasks := []*wire.Task{{Class: class, SlaMs: sla, CostMs: cost}}
		for name := range tb.classes {
			tasks = append(tasks, &wire.Task{Class: name, SlaMs: sla, CostMs: cost},
				&wire.Task{Class: name, SlaMs: 0, CostMs: 0},
				&wire.Task{Class: name, SlaMs: float32(math.NaN()), CostMs: float32(math.Inf(-1))})
		}
		for _, task := range tasks {
			for _, q := range []float32{queue, 0, -1, float32(math.NaN()), float32(math.Inf(1)), 1e30} {
				level, cell, ok := tb.lookup(task, q)
				if ok && (level > wire.MaxPriority || int64(cell) >= int64(wire.MaxTableCells)) {
					t.Fatalf("table answered level %d cell %d for %v at queue %v", level, cell, task, q)
				}
			}
		}
	})
}
