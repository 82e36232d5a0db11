package serve

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/triage-agent/triage/wire"
)

// benchTables is a pair of tables shaped like those of `bench e2e` on the
// shared overload scenario (3 classes with one SLA each, 20 cost intervals,
// 17 queue rows: 1071 cells, a 20-feature node state), the second a change
// of the first: a new epoch and node snapshot, features moved, 3% of the
// levels moved and another queue length.
func benchTables() (t1, t2 *wire.DecisionTable) {
	rng := rand.New(rand.NewPCG(15, 1))
	edges := make([]float32, 17)
	for i := range edges {
		edges[i] = float32(i * i / 4)
		if i > 0 && edges[i] <= edges[i-1] {
			edges[i] = edges[i-1] + 1
		}
	}
	state := &wire.NodeState{Epoch: 40, UnixNano: time.Now().UnixNano(), QueueLen: 9, QueueCap: 8, CpuUtil: 0.7, Model: "sla-queue", Node: "node-1",
		RunqP50Us: 12, RunqP99Us: 340}
	for i := range 20 {
		state.Features = append(state.Features, rng.Float32())
		state.Sources = append(state.Sources, []string{"ebpf", "procfs", "agent", "outcomes"}[i%4])
	}
	t1 = &wire.DecisionTable{Epoch: 1_700_000_000_000_000_000, Model: "sla-queue", QueueLen: 9, QueueEdges: edges, State: state}
	for i, name := range []string{"realtime-check", "scoring", "batch-infer"} {
		sla := float32([]int{20, 200, 2000}[i])
		c := &wire.TableClass{Name: name, SlaLoMs: []float32{sla}, SlaHiMs: []float32{sla * 1.0001}}
		lo := sla / 64
		for range 20 {
			c.CostLoMs, c.CostHiMs = append(c.CostLoMs, lo), append(c.CostHiMs, lo*1.19)
			lo *= 1.19
		}
		c.Levels = make([]byte, wire.ClassCells(c, len(edges)))
		for j := range c.Levels {
			c.Levels[j] = byte(min(4, 4-i+j%len(edges)/6))
		}
		t1.Classes = append(t1.Classes, c)
	}
	t2 = &wire.DecisionTable{Epoch: t1.Epoch + 1, Model: t1.Model, QueueLen: 14, QueueEdges: edges}
	st := proto.Clone(state).(*wire.NodeState)
	st.Epoch, st.UnixNano, st.QueueLen = state.Epoch+1, state.UnixNano+int64(100*time.Millisecond), 14
	for i := range st.Features {
		st.Features[i] += 0.01 * rng.Float32()
	}
	t2.State = st
	for _, c := range t1.Classes {
		d := proto.Clone(c).(*wire.TableClass)
		for j := range d.Levels {
			if rng.IntN(100) < 3 {
				d.Levels[j] = byte(rng.IntN(5))
			}
		}
		t2.Classes = append(t2.Classes, d)
	}
	return t1, t2
}

// countWriter counts the bytes a frame writer puts on the wire.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkTablePush is what one table push costs the agent (re-dating,
// marshal, delta encode, the write into a counter), per kind of push:
// "heartbeat" re-dates one table, "changed" alternates two tables that
// differ as a node snapshot makes them, "mix" is one change then three
// heartbeats (the ratio counted in `bench e2e --decide local`). "before"
// is the push as it was, every frame a delta of the previous one
// (FrameWriter.Write, so zstd re-keyed on every push); "after" is
// writeTable (a heartbeat is a delta against the last changed table). The
// sub-benchmarks alternate before and after in one run; wire-B/op is the
// frame with its length prefix, zstd-rekeys/op the dictionary builds.
// "warm" pushes back to back, so zstd's 256 KiB match tables stay in the
// CPU's caches; "cold" evicts them before each push (not timed), as the
// agent's other work does between two pushes.
func BenchmarkTablePush(b *testing.B) {
	t1, t2 := benchTables()
	before := func(fw *wire.FrameWriter, tab *wire.DecisionTable, age time.Duration, _ bool) error {
		return fw.Write(&wire.Envelope{Body: &wire.Envelope_DecisionTable{DecisionTable: withAge(tab, age)}})
	}
	// Each kind is the table and whether it is a change, for push i.
	kinds := []struct {
		name string
		push func(i int) (*wire.DecisionTable, bool)
	}{
		{"heartbeat", func(int) (*wire.DecisionTable, bool) { return t1, false }},
		{"changed", func(i int) (*wire.DecisionTable, bool) { return []*wire.DecisionTable{t1, t2}[i%2], true }},
		{"mix", func(i int) (*wire.DecisionTable, bool) {
			return []*wire.DecisionTable{t1, t2}[i/4%2], i%4 == 0
		}},
	}
	var evict []byte
	for _, k := range kinds {
		for _, cold := range []bool{false, true} {
			for _, way := range []struct {
				name  string
				write func(*wire.FrameWriter, *wire.DecisionTable, time.Duration, bool) error
			}{{"before", before}, {"after", writeTable}} {
				cache := map[bool]string{false: "warm", true: "cold"}[cold]
				if cold && evict == nil {
					evict = make([]byte, evictBytes)
				}
				b.Run(fmt.Sprintf("%s/%s/%s", k.name, cache, way.name), func(b *testing.B) {
					cw := &countWriter{}
					var loads uint64
					fw, err := wire.NewFrameWriter(cw, wire.SnapshotOptions()...)
					if err != nil {
						b.Fatal(err)
					}
					// The subscription's first push, a full frame, before the clock.
					if err := way.write(fw, t1, 0, true); err != nil {
						b.Fatal(err)
					}
					cw.n, loads = 0, fw.EncoderStats().DictLoads
					b.ReportAllocs()
					b.ResetTimer()
					for i := range b.N {
						if cold {
							b.StopTimer()
							evictCaches(evict, i)
							b.StartTimer()
						}
						tab, changed := k.push(i + 1)
						// Ages as a 10 ms refresh gives them; every payload differs.
						if err := way.write(fw, tab, time.Duration(i%10_000)*time.Microsecond, changed); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(cw.n)/float64(b.N), "wire-B/op")
					b.ReportMetric(float64(fw.EncoderStats().DictLoads-loads)/float64(b.N), "zstd-rekeys/op")
				})
			}
		}
	}
}

// evictBytes is more than this machine's caches: writing a line in every
// 64 bytes of it leaves the encoder's tables in memory, as they are in the
// agent, where a push comes every 17 ms or so between model runs, QUIC and
// the collector.
const evictBytes = 64 << 20

func evictCaches(buf []byte, i int) {
	for j := 0; j < len(buf); j += 64 {
		buf[j] = byte(i)
	}
}
