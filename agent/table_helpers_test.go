package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// slaQueueMLP is a one-layer model whose priority follows the SLA and the
// queue: urgent work (20 ms) at 4, 200 ms work at 2, 2 s work at 0, and, on
// a queue of more than about five tasks per worker, 3 for what would have
// been 4 or 2. So a table's cells differ along both axes.
func slaQueueMLP() *policy.MLP {
	l := policy.Dense{In: policy.NumFeatures, Out: policy.NumActions,
		W: make([]float32, policy.NumFeatures*policy.NumActions), B: make([]float32, policy.NumActions)}
	w := func(action, feature int, v float32) { l.W[action*policy.NumFeatures+feature] = v }
	w(4, policy.FeatSLA, -10)
	l.B[4] = 5
	w(0, policy.FeatSLA, 10)
	l.B[0] = -6.5
	w(3, policy.FeatQueue, 10)
	l.B[3] = -3
	l.B[1] = -100
	return &policy.MLP{Layers: []policy.Dense{l}}
}

// localAgent runs an agent serving slaQueueMLP with one worker slot (so a
// few tasks make a long queue) and its cfg fields.
func localAgent(t *testing.T, cfg Config) *testAgent {
	t.Helper()
	if cfg.ModelPath == "" {
		cfg.ModelPath = filepath.Join(t.TempDir(), "model.onnx")
		writeModel(t, cfg.ModelPath, slaQueueMLP(), "sla-queue")
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	cfg.NoEBPF = true
	return startAgent(t, cfg)
}

// localClient dials ta with local decisions on.
func localClient(t *testing.T, ta *testAgent, cfg client.Config) *client.Client {
	t.Helper()
	cfg.PinSHA256, cfg.ServerName, cfg.LocalDecisions = ta.Fingerprint(), "localhost", true
	cl, err := client.Dial(context.Background(), ta.QUICAddr().String(), cfg)
	if err != nil {
		t.Fatalf("dialing the agent: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// The three kinds of task of the tests: what slaQueueMLP puts at 4, 2, 0
// on an empty queue.
func urgentTask(id uint64) *wire.Task {
	return &wire.Task{Id: id, Class: "realtime-check", SlaMs: 20, CostMs: 2}
}

func scoringTask(id uint64) *wire.Task {
	return &wire.Task{Id: id, Class: "scoring", SlaMs: 200, CostMs: 15}
}

func batchTask(id uint64) *wire.Task {
	return &wire.Task{Id: id, Class: "batch-infer", SlaMs: 2000, CostMs: 200}
}

// untilLocal asks the agent about a task like task (which puts its class
// and values in the tables' demand), waits until the client can decide
// task locally, reports both outcomes and returns the local level.
func untilLocal(t *testing.T, cl *client.Client, task *wire.Task) uint32 {
	t.Helper()
	ctx := context.Background()
	asked := &wire.Task{TaskId: "asked-" + wire.TaskID(task), Class: task.GetClass(), SlaMs: task.GetSlaMs(), CostMs: task.GetCostMs()}
	if _, err := cl.DecideRemote(ctx, []*wire.Task{asked}); err != nil {
		t.Fatal(err)
	}
	var level uint32
	waitFor(t, 5*time.Second, "a table that answers "+task.GetClass(), func() bool {
		p, ok := cl.DecideLocal(task)
		level = p
		return ok
	})
	finish(t, cl, asked, task)
	return level
}

// finish reports the outcomes of tasks (5 ms each, met): the agent's queue
// goes back to what it was.
func finish(t *testing.T, cl *client.Client, tasks ...*wire.Task) {
	t.Helper()
	outs := make([]*wire.Outcome, len(tasks))
	for i, task := range tasks {
		outs[i] = &wire.Outcome{Id: task.GetId(), TaskId: task.GetTaskId(), LatencyMs: 5, ServiceMs: 4, SlaMet: true}
	}
	if _, err := cl.ReportOutcomes(context.Background(), outs); err != nil {
		t.Fatal(err)
	}
}
