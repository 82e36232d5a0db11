package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
	"github.com/triage-agent/triage/wire"
)

// A client deciding from the agent's table answers what the agent answers
// over the network for the same task at the same moment, on a real QUIC
// connection: by SLA (the model's 4, 2, 0) and by queue (3 once the queue
// is long), the queue being the client's own estimate between tables.
func TestLocalDecisionsAreTheAgentsDecisions(t *testing.T) {
	ta := localAgent(t, Config{})
	cl := localClient(t, ta, client.Config{})
	ctx := context.Background()
	for i, mk := range []func(uint64) *wire.Task{urgentTask, scoringTask, batchTask} {
		local := untilLocal(t, cl, mk(uint64(100+i)))
		// Now on an empty queue: one decided locally, one remotely.
		a, b := mk(uint64(200+i)), mk(uint64(300+i))
		l, ok := cl.DecideLocal(a)
		resp, err := cl.DecideRemote(ctx, []*wire.Task{b})
		if err != nil || !ok {
			t.Fatalf("%s: local ok %v, remote %v", a.GetClass(), ok, err)
		}
		if r := resp.GetDecisions()[0].GetPriority(); l != r || l != local {
			t.Fatalf("%s: local %d (first %d), remote %d", a.GetClass(), l, local, r)
		}
		if want := []uint32{4, 2, 0}[i]; l != want {
			t.Fatalf("%s at %d, want %d", a.GetClass(), l, want)
		}
		finish(t, cl, a, b)
	}
	// Urgent tasks decided locally one after another, no outcome: the
	// queue grows and the model's 3 takes over from 4 once it is long
	// enough, at the same length as the agent would switch.
	var levels []uint32
	var open []*wire.Task
	for i := range 12 {
		task := urgentTask(uint64(400 + i))
		l, ok := cl.DecideLocal(task)
		if !ok {
			t.Fatalf("local decision %d refused: %+v", i, cl.LocalStats())
		}
		levels = append(levels, l)
		open = append(open, task)
	}
	t.Logf("urgent tasks on a growing queue: %v", levels)
	if levels[0] != 4 || levels[len(levels)-1] != 3 {
		t.Fatalf("levels on a growing queue %v: want 4 first, 3 last", levels)
	}
	for i := 1; i < len(levels); i++ {
		if levels[i] > levels[i-1] {
			t.Fatalf("levels %v go back up", levels)
		}
	}
	finish(t, cl) // reports the local decisions: the agent's queue holds them
	if n := ta.tracker.len(); n != len(open) {
		t.Fatalf("agent tracks %d tasks, want the %d decided locally", n, len(open))
	}
	last, ok := cl.DecideLocal(urgentTask(500))
	resp, err := cl.DecideRemote(ctx, []*wire.Task{urgentTask(501)})
	if err != nil || !ok || resp.GetDecisions()[0].GetPriority() != last {
		t.Fatalf("on the long queue: local %d (%v), remote %v (%v)", last, ok, resp, err)
	}
	finish(t, cl, append(open, urgentTask(500), urgentTask(501))...)
	if n := ta.tracker.len(); n != 0 {
		t.Fatalf("agent still tracks %d tasks after every outcome", n)
	}
	st := cl.LocalStats()
	t.Logf("client: %+v", st)
	if st.Local < 16 || st.Remote < 5 || st.Tables == 0 || st.BadTables != 0 || st.ReportErrors != 0 || st.Reported != st.Local {
		t.Fatalf("client stats %+v", st)
	}
}

// Local decisions join the agent's books: its queue (feature 0) counts
// them until their outcomes, the metrics count them, and the experience
// log records each with the served priority and the state of the table
// cell it was decided from.
func TestLocalDecisionsAreLoggedWithTheirCellState(t *testing.T) {
	dir := t.TempDir()
	ta := localAgent(t, Config{ExperienceDir: dir})
	cl := localClient(t, ta, client.Config{})
	untilLocal(t, cl, scoringTask(1))
	const n = 20
	var tasks []*wire.Task
	served := map[string]uint32{}
	for i := range n {
		task := &wire.Task{TaskId: fmt.Sprintf("local-%d", i), Class: "scoring", SlaMs: 200, CostMs: 15}
		p, ok := cl.DecideLocal(task)
		if !ok {
			t.Fatalf("task %d not decided locally", i)
		}
		tasks, served[task.GetTaskId()] = append(tasks, task), p
	}
	finish(t, cl)
	if got := ta.tracker.len(); got != n {
		t.Fatalf("agent tracks %d tasks, want %d", got, n)
	}
	if got := ta.metric(t, `triage_local_decisions_total{state="table"}`); got < n {
		t.Fatalf("triage_local_decisions_total{state=table} = %v, want at least %d", got, n)
	}
	finish(t, cl, tasks...)
	ta.stop()
	logged := 0
	err := experience.ReadDir(dir, func(r experience.Record) error {
		p, ok := served[r.TaskID]
		if !ok {
			return nil // the tasks untilLocal decided
		}
		logged++
		if uint32(r.Action) != p || r.Model != "sla-queue" || r.TimedOut {
			t.Errorf("record %s: action %d model %q timed out %v, want %d", r.TaskID, r.Action, r.Model, r.TimedOut, p)
		}
		// The cell's state: the task's SLA and cost exactly (the grid keeps
		// a class's few values as they are), a queue that grew with them.
		if r.State[policy.FeatSLA] != policy.LogScaleMs(200) || r.State[policy.FeatCost] != policy.LogScaleMs(15) {
			t.Errorf("record %s: state %v is not the cell's", r.TaskID, r.State)
		}
		return nil
	})
	if err != nil || logged != n {
		t.Fatalf("%d of %d local decisions logged (%v)", logged, n, err)
	}
}

// A table older than MaxStaleness is never decided from: every task goes
// to the agent, and the answers are the agent's.
func TestStaleTablesGoToTheAgent(t *testing.T) {
	ta := localAgent(t, Config{})
	cl := localClient(t, ta, client.Config{MaxStaleness: time.Microsecond})
	ctx := context.Background()
	for i := range 30 {
		task := scoringTask(uint64(i + 1))
		if _, ok := cl.DecideLocal(task); ok {
			t.Fatal("decided from a table older than a microsecond")
		}
		resp, err := cl.Decide(ctx, []*wire.Task{task})
		if err != nil || resp.GetDecisions()[0].GetPriority() != 2 || len(resp.GetDecisions()[0].GetQ()) != policy.NumActions {
			t.Fatalf("task %d: %v %v", i, resp, err)
		}
		finish(t, cl, task)
		time.Sleep(2 * time.Millisecond)
	}
	st := cl.LocalStats()
	if st.Local != 0 || st.Remote != 30 || st.Stale+st.NoTable == 0 {
		t.Fatalf("stats %+v", st)
	}
}

// When the agent goes away its table ages out: within MaxStaleness the
// client stops deciding locally (every answer it gave was 0..4), and
// decisions fail like any call to an agent that is gone.
func TestAgentGoneTableAgesOut(t *testing.T) {
	ta := localAgent(t, Config{})
	cl := localClient(t, ta, client.Config{MaxStaleness: 30 * time.Millisecond})
	untilLocal(t, cl, urgentTask(1))
	ta.stop()
	stopped := time.Now()
	for i := uint64(10); ; i++ {
		p, ok := cl.DecideLocal(urgentTask(i))
		if !ok {
			break
		}
		if p > 4 {
			t.Fatalf("local priority %d", p)
		}
		if time.Since(stopped) > 30*time.Millisecond+50*time.Millisecond {
			t.Fatalf("still deciding locally %v after the agent stopped", time.Since(stopped))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := cl.Decide(ctx, []*wire.Task{urgentTask(99)}); err == nil {
		t.Fatal("a decision with the agent gone")
	}
}

// With a guard and a model whose members disagree, the table holds the
// guard's controller's levels, as the agent's own answers do.
func TestTableCarriesTheGuardsDecisions(t *testing.T) {
	meta := policy.CurrentMetadata("disputed", "test")
	ta := localAgent(t, Config{ModelPath: writeModelMeta(t, disputedMLP(), meta)})
	cl := localClient(t, ta, client.Config{})
	// The default guard's controller at idle admits normal work (an SLA
	// over its urgency threshold) at 2 and urgent work at 4, where the
	// disputed network would say 4 for everything.
	if DefaultGuard != "gradient2" || control.DefaultGradient2.UrgentMs >= 2000 {
		t.Fatalf("the test assumes gradient2 with an urgency threshold under the batch class's 2 s SLA: %s, %+v", DefaultGuard, control.DefaultGradient2.Tiers)
	}
	if l := untilLocal(t, cl, batchTask(1)); l != 2 {
		t.Fatalf("normal task decided locally at %d, want the controller's 2", l)
	}
	if l := untilLocal(t, cl, urgentTask(2)); l != 4 {
		t.Fatalf("urgent task decided locally at %d, want the controller's 4", l)
	}
	if got := ta.metric(t, `triage_guard_decisions_total{reason="disagree"}`); got < 4 {
		t.Fatalf("guard counted %v disputed decisions, want the local ones too", got)
	}
}

// A table keeps its epoch while nothing it is made of moves (it is only
// re-dated), and takes a new one when the demand brings a class.
func TestTableEpochs(t *testing.T) {
	// A node snapshot that never refreshes: nothing moves but what the test does.
	ta := localAgent(t, Config{StateInterval: time.Hour, TableInterval: 5 * time.Millisecond})
	cl := localClient(t, ta, client.Config{})
	untilLocal(t, cl, scoringTask(1))
	time.Sleep(10 * time.Millisecond)
	first, at1 := ta.Table()
	time.Sleep(10 * time.Millisecond)
	second, at2 := ta.Table()
	if first.GetEpoch() != second.GetEpoch() || !at2.After(at1) || len(second.GetClasses()) != 1 {
		t.Fatalf("quiet refresh: epochs %d then %d, dated %v then %v, classes %d", first.GetEpoch(), second.GetEpoch(), at1, at2, len(second.GetClasses()))
	}
	untilLocal(t, cl, batchTask(2))
	third, _ := ta.Table()
	if third.GetEpoch() <= second.GetEpoch() || len(third.GetClasses()) != 2 {
		t.Fatalf("after a new class: epoch %d (was %d), %d classes", third.GetEpoch(), second.GetEpoch(), len(third.GetClasses()))
	}
	for _, tb := range []*wire.DecisionTable{first, second, third} {
		if err := wire.CheckDecisionTable(tb); err != nil {
			t.Fatalf("epoch %d: %v", tb.GetEpoch(), err)
		}
		if tb.GetModel() != "sla-queue" || tb.GetState() == nil {
			t.Fatalf("epoch %d: model %q state %v", tb.GetEpoch(), tb.GetModel(), tb.GetState())
		}
	}
	if got := ta.metric(t, `triage_decision_table_refreshes_total{result="current"}`); got < 1 {
		t.Fatalf("no refresh found the table current (%v)", got)
	}
}

// A new model reaches the clients' tables: once it is swapped in, local
// decisions are its decisions.
func TestTableFollowsTheModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.onnx")
	writeModel(t, path, slaQueueMLP(), "sla-queue")
	ta := localAgent(t, Config{ModelPath: path, ModelWatchInterval: 20 * time.Millisecond})
	cl := localClient(t, ta, client.Config{})
	if l := untilLocal(t, cl, scoringTask(1)); l != 2 {
		t.Fatalf("before the swap: %d", l)
	}
	writeModel(t, path, alwaysMLP(1), "always-1")
	ctx := context.Background()
	waitFor(t, 5*time.Second, "local decisions by the new model", func() bool {
		task := scoringTask(uint64(time.Now().UnixNano()))
		resp, err := cl.Decide(ctx, []*wire.Task{task})
		if err != nil {
			t.Fatal(err)
		}
		finish(t, cl, task)
		return len(resp.GetDecisions()[0].GetQ()) == 0 && resp.GetModel() == "always-1" && resp.GetDecisions()[0].GetPriority() == 1
	})
}

// The shadow model sees the local decisions like the agent's own: the
// serving model's decision of the cell against the candidate's on the
// cell's state.
func TestShadowSeesLocalDecisions(t *testing.T) {
	dir := t.TempDir()
	cand := filepath.Join(dir, "candidate.onnx")
	writeModel(t, cand, alwaysMLP(4), "candidate-1")
	ta := localAgent(t, Config{ShadowModelPath: cand})
	cl := localClient(t, ta, client.Config{})
	untilLocal(t, cl, batchTask(1))
	waitFor(t, 5*time.Second, "shadow to see the first tasks", func() bool { return ta.shadow.Stats().Tasks == 2 })
	const n = 30
	for i := range n {
		task := &wire.Task{TaskId: fmt.Sprintf("s-%d", i), Class: "batch-infer", SlaMs: 2000, CostMs: 200}
		if p, ok := cl.DecideLocal(task); !ok || p != 0 {
			t.Fatalf("task %d: local %d %v, want 0", i, p, ok)
		}
		finish(t, cl, task) // the queue stays short: the serving model says 0
	}
	waitFor(t, 5*time.Second, "shadow to see the local decisions", func() bool { return ta.shadow.Stats().Tasks == 2+n })
	// Serving 0 (the SLA-and-queue model on a short queue), candidate 4.
	if st := ta.shadow.Stats(); st.Confusion[0][4] != 2+n || st.Agree != 0 {
		t.Fatalf("shadow stats %+v", st)
	}
}

// Between two node snapshots a refresh keeps every cell's state: what moved
// since (here the class's latency quantiles, from outcomes) reaches the
// cells with the next snapshot, and only then is the model run again.
func TestTableStatesFollowTheNodeSnapshot(t *testing.T) {
	// A node snapshot that refreshes only when the test says.
	ta := localAgent(t, Config{StateInterval: time.Hour, TableInterval: 5 * time.Millisecond})
	cl := localClient(t, ta, client.Config{})
	untilLocal(t, cl, scoringTask(1))
	ta.Table()
	before := ta.metric(t, `triage_decision_table_evaluated_cells_total`)
	if before <= 0 {
		t.Fatalf("no cell evaluated for the first table (%v)", before)
	}
	// Scoring tasks that take 40 times their cost move the class's quantiles.
	ctx := context.Background()
	for i := range 40 {
		task := &wire.Task{TaskId: fmt.Sprintf("slow-%d", i), Class: "scoring", SlaMs: 200, CostMs: 15}
		if _, err := cl.DecideRemote(ctx, []*wire.Task{task}); err != nil {
			t.Fatal(err)
		}
		out := &wire.Outcome{TaskId: task.GetTaskId(), LatencyMs: 600, ServiceMs: 600}
		if _, err := cl.ReportOutcomes(ctx, []*wire.Outcome{out}); err != nil {
			t.Fatal(err)
		}
	}
	for range 6 {
		time.Sleep(6 * time.Millisecond)
		ta.Table()
	}
	if got := ta.metric(t, `triage_decision_table_evaluated_cells_total`); got != before {
		t.Fatalf("refreshes between snapshots evaluated %v cells, want none", got-before)
	}
	ta.refreshNode(time.Now())
	time.Sleep(6 * time.Millisecond)
	ta.Table()
	if got := ta.metric(t, `triage_decision_table_evaluated_cells_total`); got <= before {
		t.Fatalf("the snapshot after slow outcomes evaluated no cell (%v before, %v after)", before, got)
	}
}
