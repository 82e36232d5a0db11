package agent

import (
	"context"
	"errors"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/state"
	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/internal/testmodel"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// The decision loop end to end: decisions over QUIC, outcomes back, each
// outcome an experience record carrying the state and action of its decision.
func TestDecideOutcomeExperience(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exp")
	ta := startAgent(t, Config{ExperienceDir: dir, NoEBPF: true})
	cl := ta.dial(t)
	ctx := context.Background()
	const n = 120
	decided := map[uint64]*wire.Decision{}
	costs := map[uint64]float64{} // each task's descriptor cost
	for from := 0; from < n; from += 40 {
		batch := tasks(from, 40)
		for _, task := range batch {
			costs[task.GetId()] = float64(task.GetCostMs())
		}
		resp, err := cl.Decide(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetModel() != policy.BootstrapVersion && resp.GetModel() == "" {
			t.Fatalf("answer names no model")
		}
		for _, d := range resp.GetDecisions() {
			if d.GetPriority() >= policy.NumActions || len(d.GetQ()) != policy.NumActions {
				t.Fatalf("bad decision %v", d)
			}
			decided[d.GetId()] = d
		}
	}
	if got := ta.tracker.len(); got != n {
		t.Fatalf("queue tracks %d tasks, want %d", got, n)
	}
	// The outcomes go back in one report, which the agent finishes in its
	// order: finishOrder says how far along each task's was.
	var outs []*wire.Outcome
	finishOrder := map[uint64]int{}
	for id := range decided {
		finishOrder[id] = len(outs)
		outs = append(outs, &wire.Outcome{Id: id, LatencyMs: 5, SlaMet: id%2 == 0})
	}
	outs = append(outs, &wire.Outcome{Id: 999_999, LatencyMs: 1}) // never decided
	if _, err := cl.ReportOutcomes(ctx, outs); err != nil {
		t.Fatal(err)
	}
	if got := ta.tracker.len(); got != 0 {
		t.Fatalf("queue still tracks %d tasks after their outcomes", got)
	}
	var sum float64
	for p := 0; p < policy.NumActions; p++ {
		sum += ta.metric(t, `triage_decisions_total{priority="`+string(rune('0'+p))+`"}`)
	}
	if sum != n {
		t.Fatalf("decisions_total sums to %v, want %d", sum, n)
	}
	if got := ta.metric(t, "triage_outcomes_unknown_total"); got != 1 {
		t.Fatalf("outcomes_unknown_total = %v, want 1", got)
	}
	// The native answers went through the delta codec: its ratio is exported.
	if r := ta.metric(t, "triage_codec_compression_ratio"); r <= 0 {
		t.Fatalf("codec ratio = %v", r)
	}
	workers := ta.asm.Workers()
	ta.stop()

	records := 0
	err := experience.ReadDir(dir, func(r experience.Record) error {
		records++
		var id uint64
		for _, c := range r.TaskID {
			id = id*10 + uint64(c-'0')
		}
		d, ok := decided[id]
		if !ok {
			return errors.New("record for an undecided task " + r.TaskID)
		}
		if uint32(r.Action) != d.GetPriority() || r.Q[0] != d.GetQ()[0] || r.LatencyMs != 5 || r.SLAMet != (id%2 == 0) {
			t.Errorf("record %+v does not match decision %v", r, d)
		}
		if r.Reward < -1 || r.Reward > 1 || r.Phase == "" || r.Model == "" {
			t.Errorf("record %s: reward %v phase %q model %q", r.TaskID, r.Reward, r.Phase, r.Model)
		}
		// The states come from agent/state: decided before any outcome, the
		// class features are neutral and the cost is the descriptor's; the
		// next state's class statistics hold the reported 5 ms latencies,
		// its class p99 over the SLA reads them against the task's own SLA,
		// and the SLA is the descriptor's still.
		sla := slaOf(r.Class)
		if r.State[policy.FeatClassP50] != policy.Neutral[policy.FeatClassP50] || r.State[policy.FeatCost] != policy.LogScaleMs(float64(float32(sla)/10)) {
			t.Errorf("record %s: decided state %v", r.TaskID, r.State)
		}
		if r.Next[policy.FeatClassP50] != policy.LogScaleMs(5) || r.Next[policy.FeatClassP99] != policy.LogScaleMs(5) ||
			r.Next[policy.FeatSLA] != policy.LogScaleMs(sla) ||
			math.Abs(float64(r.Next[policy.FeatClassP99OverSLA])-(5/sla)/(1+5/sla)) > 1e-6 {
			t.Errorf("record %s: next state %v", r.TaskID, r.Next)
		}
		// Every feature the agent computes itself (all but the kernel's and
		// the accelerator's) is what its queue, its backlog per priority,
		// the descriptor and the reported outcomes say. A task of batch b
		// was decided behind the 40·b tasks of the batches before it and
		// their expected work at the priorities they got; its next state
		// is taken as it finishes, behind the tasks reported after it. No
		// outcome carried service_ms, so no queueing delay is known.
		batch := int(id-1) / 40
		var before []uint64
		for prev := range decided {
			if int(prev-1)/40 < batch {
				before = append(before, prev)
			}
		}
		// Feature 20 counts the SLAs of the tasks decided before it (ids
		// 1..id-1, in order); its next state, those of all n.
		wantState := agentVector(workers, len(before), backlog(decided, costs, before), sla, math.NaN(), tighterShare(int(id)-1, sla))
		checkAgentFeatures(t, "record "+r.TaskID+" decided", r.State, wantState)
		var after []uint64
		for later, k := range finishOrder {
			if k > finishOrder[id] {
				after = append(after, later)
			}
		}
		wantNext := agentVector(workers, len(after), backlog(decided, costs, after), sla, 5, tighterShare(n, sla))
		checkAgentFeatures(t, "record "+r.TaskID+" next", r.Next, wantNext)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if records != n {
		t.Fatalf("%d experience records, want %d", records, n)
	}
}

// agentVector is the state vector policy.Vector makes of what the agent
// knows of a task of tasks(): queue tasks in flight over workers slots with
// inFlight expected work per priority, the task's SLA and its descriptor's
// cost (a tenth of the SLA), and its class's service time classMs (NaN:
// no outcome yet). The kernel features are left unknown: checkAgentFeatures
// skips them.
func agentVector(workers, queue int, inFlight [policy.NumActions]float64, sla, classMs, tighter float64) policy.State {
	nan := math.NaN()
	return policy.Vector(&policy.Inputs{
		QueueLen: float64(queue), Workers: float64(workers), SLAMs: sla, CostMs: float64(float32(sla) / 10),
		ClassP50Ms: classMs, ClassP99Ms: classMs, WaitP50Ms: nan, WaitP99Ms: nan, InFlightMs: inFlight,
		AccelMemFill: nan, RunqP50Us: nan, RunqP99Us: nan, AcceptQueueFill: nan, BlkioP99Us: nan,
		CPUUtil: nan, RetransFraction: nan, SyscallP99Us: nan, TighterShare: tighter,
	})
}

// tighterShare is feature 20 of a task with the given SLA after the first
// k tasks of tasks() were decided (NaN for none): the share of them whose
// SLA is under half of sla.
func tighterShare(k int, sla float64) float64 {
	if k == 0 {
		return math.NaN()
	}
	c := 0
	for _, t := range tasks(0, k) {
		if float64(t.GetSlaMs()) < sla/2 {
			c++
		}
	}
	return float64(c) / float64(k)
}

// backlog is the expected work (the descriptors' costs) of the given tasks
// per the priority each was given.
func backlog(decided map[uint64]*wire.Decision, costs map[uint64]float64, ids []uint64) [policy.NumActions]float64 {
	var w [policy.NumActions]float64
	for _, id := range ids {
		w[decided[id].GetPriority()] += costs[id]
	}
	return w
}

// checkAgentFeatures compares got with want on every feature that comes
// from the agent, the descriptor or the outcomes, not from the kernel or
// the accelerator (whose readings the test cannot know).
func checkAgentFeatures(t *testing.T, what string, got, want policy.State) {
	t.Helper()
	for f := range got {
		if f == policy.FeatAccelMem || slices.Contains(policy.KernelFeatures, f) {
			continue
		}
		if math.Abs(float64(got[f]-want[f])) > 1e-6 {
			t.Errorf("%s: %s = %v, want %v", what, policy.FeatureNames[f], got[f], want[f])
		}
	}
}

func slaOf(class string) float64 {
	switch class {
	case "realtime-check":
		return 20
	case "scoring":
		return 200
	}
	return 2000
}

// Fault: the model file is replaced by garbage while the agent serves. The
// old model keeps serving; a metric and a log line say why.
func TestModelReplacedByGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.onnx")
	writeModel(t, path, policy.BootstrapMLP(), "good-1")
	ta := startAgent(t, Config{ModelPath: path, ModelWatchInterval: 20 * time.Millisecond, NoEBPF: true})
	cl := ta.dial(t)
	resp, err := cl.Decide(context.Background(), tasks(0, 3))
	if err != nil || resp.GetModel() != "good-1" {
		t.Fatalf("before: %v %v", resp.GetModel(), err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte("this is not an ONNX model\x00\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "reload failure metric", func() bool {
		return ta.metric(t, "triage_model_reload_failures_total") >= 1
	})
	if !strings.Contains(ta.logs.String(), "model reload refused; the running model keeps serving") {
		t.Fatalf("no log line for the refused model:\n%s", ta.logs.String())
	}
	for i := 0; i < 5; i++ {
		resp, err := cl.Decide(context.Background(), tasks(10*i, 5))
		if err != nil || resp.GetModel() != "good-1" || len(resp.GetDecisions()) != 5 {
			t.Fatalf("after garbage: model %q, %d decisions, err %v", resp.GetModel(), len(resp.GetDecisions()), err)
		}
	}
	if ta.metric(t, `triage_model_info{device="cpu",schema="`+policy.StateSchema+`",version="good-1"}`) != 1 {
		t.Fatal("model_info no longer names the serving model")
	}
	if ta.metric(t, "triage_model_reload_last_failure_timestamp_seconds") <= 0 {
		t.Fatal("last failure timestamp not set")
	}
	// A good file afterwards is picked up: the refusal did not wedge the watch.
	writeModel(t, tmp, alwaysMLP(3), "good-2")
	os.Rename(tmp, path)
	waitFor(t, 10*time.Second, "the next good model", func() bool { return ta.ModelVersion() == "good-2" })
}

// Fault: a client disconnects while its request sits in a batch with
// another client's. The other client gets its answer; the agent serves on.
func TestClientDisconnectsMidBatch(t *testing.T) {
	ta := startAgent(t, Config{BatchWindow: 5 * time.Millisecond, NoEBPF: true})
	stay := ta.dial(t)
	var wg sync.WaitGroup
	for round := 0; round < 10; round++ {
		leaver := ta.dial(t)
		ctx, cancel := context.WithCancel(context.Background())
		wg.Add(2)
		errc := make(chan error, 1)
		go func() {
			defer wg.Done()
			_, err := leaver.Decide(ctx, tasks(1000*round, 50))
			errc <- err
		}()
		go func() {
			defer wg.Done()
			time.Sleep(time.Millisecond) // inside the 5 ms batch window
			cancel()
			leaver.Close()
		}()
		resp, err := stay.Decide(context.Background(), tasks(1000*round+500, 20))
		if err != nil || len(resp.GetDecisions()) != 20 {
			t.Fatalf("round %d: the staying client got %v, %v", round, resp, err)
		}
		wg.Wait()
		<-errc
	}
	// The agent still serves new clients, and nothing the leavers asked is tracked twice.
	fresh := ta.dial(t)
	if resp, err := fresh.Decide(context.Background(), tasks(99_000, 10)); err != nil || len(resp.GetDecisions()) != 10 {
		t.Fatalf("after disconnects: %v %v", resp, err)
	}
	if ta.tracker.len() > 10*(50+20)+10 {
		t.Fatalf("tracker holds %d tasks", ta.tracker.len())
	}
}

// Fault: no eBPF at all. The agent serves from procfs and says so on
// /readyz and /metrics.
func TestProbesUnavailable(t *testing.T) {
	ta := startAgent(t, Config{NoEBPF: true})
	code, body := ta.get(t, "/readyz")
	if code != http.StatusOK {
		t.Fatalf("/readyz = %d:\n%s", code, body)
	}
	for _, want := range []string{"ready", "degraded:", "cpu_util=procfs", "net_or_syscall=procfs", "probe runqlat", "unavailable"} {
		if !strings.Contains(body, want) {
			t.Errorf("/readyz lacks %q:\n%s", want, body)
		}
	}
	if v := ta.metric(t, `triage_feature_source{feature="cpu_util",source="procfs"}`); v != 1 {
		t.Errorf("cpu_util source metric = %v", v)
	}
	_, metrics := ta.get(t, "/metrics")
	if strings.Contains(metrics, `source="ebpf"`) {
		t.Error("a feature claims an eBPF source with eBPF off")
	}
	if !strings.Contains(metrics, "triage_probe_attached{") || strings.Contains(metrics, "triage_probe_attached{detail=\"tp_btf\"") {
		t.Error("probe states missing or claiming attachment")
	}
	resp, err := ta.dial(t).Decide(context.Background(), tasks(0, 8))
	if err != nil || len(resp.GetDecisions()) != 8 {
		t.Fatalf("decide without eBPF: %v %v", resp, err)
	}
	st, err := ta.dial(t).Decide(context.Background(), tasks(100, 1))
	_ = st
	if err != nil {
		t.Fatal(err)
	}
	node := ta.State()
	if len(node.GetSources()) != policy.NumFeatures || node.GetSources()[policy.FeatCPUUtil] != string(state.SourceProcfs) {
		t.Fatalf("node state sources %v", node.GetSources())
	}
}

// Every probe this kernel supports, as CI runs it (root): /readyz lists
// them attached and eBPF sources feed the node features.
func TestProbesAttachAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading BPF programs needs root (CAP_BPF, CAP_PERFMON)")
	}
	ta := startAgent(t, Config{ProbeCPUStats: true})
	_, body := ta.get(t, "/readyz")
	if !strings.Contains(body, "attached") || !strings.Contains(body, " ebpf") {
		t.Fatalf("/readyz as root shows no attached probe:\n%s", body)
	}
	if ta.metric(t, `triage_feature_source{feature="runq_p99_log",source="ebpf"}`) != 1 {
		t.Fatalf("run-queue latency not from eBPF")
	}
	tiers := 0.0
	for _, tier := range []string{"tp_btf", "raw_tp", "tracepoint"} {
		tiers += max(ta.metric(t, `triage_probe_attached{probe="runqlat",tier="`+tier+`"}`), 0)
	}
	if tiers != 1 {
		t.Errorf("triage_probe_attached does not name the runqlat tier once")
	}
	// The scheduler switches all the time: runqlat's programs have run.
	waitFor(t, 5*time.Second, "runqlat CPU time", func() bool {
		return ta.metric(t, `triage_probe_cpu_seconds_total{probe="runqlat"}`) > 0
	})
}

// Shadow evaluation and promotion: the candidate decides on the same
// requests, is not served, reports how it differs, and POST /admin/promote
// hot-swaps it in.
func TestShadowThenPromote(t *testing.T) {
	dir := t.TempDir()
	cand := filepath.Join(dir, "candidate.onnx")
	writeModel(t, cand, alwaysMLP(4), "candidate-1")
	serving := filepath.Join(dir, "serving.onnx")
	writeModel(t, serving, alwaysMLP(0), "serving-1")
	// The guard's urgent rule off: it would lift the serving model's 0 for
	// the urgent tasks, and what is served must be the serving model's.
	ta := startAgent(t, Config{ModelPath: serving, ShadowModelPath: cand, NoEBPF: true, GuardKeepUrgentMs: -1})
	cl := ta.dial(t)
	for i := 0; i < 5; i++ {
		resp, err := cl.Decide(context.Background(), tasks(20*i, 20))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range resp.GetDecisions() {
			if d.GetPriority() != 0 || resp.GetModel() != "serving-1" {
				t.Fatalf("the shadow model was served: %v from %s", d, resp.GetModel())
			}
		}
	}
	waitFor(t, 5*time.Second, "shadow to see 100 tasks", func() bool { return ta.shadow.Stats().Tasks == 100 })
	st := ta.shadow.Stats()
	if st.Agree != 0 || st.AgreementRate != 0 || st.Confusion[0][4] != 100 || st.MeanAbsQDiff <= 0 || len(st.Recent) == 0 {
		t.Fatalf("shadow stats %+v", st)
	}
	code, body := ta.get(t, "/admin/shadow")
	if code != 200 || !strings.Contains(body, `"agreement_rate":0`) || !strings.Contains(body, `"serving":"serving-1"`) {
		t.Fatalf("/admin/shadow %d %s", code, body)
	}
	if resp, err := http.Get(ta.url("/admin/promote")); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("GET /admin/promote = %d, want 405", resp.StatusCode)
		}
	}
	resp, err := http.Post(ta.url("/admin/promote"), "", nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("promote: %v %v", resp, err)
	}
	resp.Body.Close()
	d, err := cl.Decide(context.Background(), tasks(500, 3))
	if err != nil || d.GetModel() != "candidate-1" || d.GetDecisions()[0].GetPriority() != 4 {
		t.Fatalf("after promotion: %v %v", d, err)
	}
	// Persisted over --model, so the file watch agrees and a restart serves it.
	b, _ := os.ReadFile(serving)
	cb, _ := os.ReadFile(cand)
	if string(b) != string(cb) {
		t.Fatal("promotion did not persist the candidate to --model")
	}
	resp, _ = http.Post(ta.url("/admin/promote"), "", nil)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("second promote = %d, want 409", resp.StatusCode)
	}
	resp.Body.Close()
}

func TestPromoteNeedsTokenWhenConfigured(t *testing.T) {
	dir := t.TempDir()
	cand := filepath.Join(dir, "candidate.onnx")
	writeModel(t, cand, alwaysMLP(2), "candidate-2")
	tok := "0123456789abcdef0123"
	ta := startAgent(t, Config{ShadowModelPath: cand, Tokens: []string{tok}, NoEBPF: true})
	resp, _ := http.Post(ta.url("/admin/promote"), "", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("promote without token = %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", ta.url("/admin/promote"), nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("promote with token: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"batch window too long":             {BatchWindow: time.Second},
		"mmap threshold over glibc's bound": {MallocMmapThreshold: policy.MaxCHeapMmapThreshold + 1},
		"negative mmap threshold":           {MallocMmapThreshold: -1},
		"niceness under -20":                {Nice: -21},
		"niceness over 19":                  {Nice: 20},
		"slice under the kernel's least":    {SchedSlice: 50 * time.Microsecond},
		"slice over the kernel's most":      {SchedSlice: time.Second},
		"cert without key":                  {TLSCertFile: "x.pem"},
		"open port without auth": {QUICAddr: "0.0.0.0:0", AdminAddr: "127.0.0.1:0", ExperienceDir: "-", FlamegraphDir: "-",
			NoEBPF: true, Device: "cpu"},
		"missing model": {ModelPath: "/nonexistent/model.onnx", ExperienceDir: "-", FlamegraphDir: "-", NoEBPF: true, AdminAddr: "127.0.0.1:0", QUICAddr: "127.0.0.1:0"},
	} {
		t.Run(name, func(t *testing.T) {
			a, err := New(cfg)
			if err == nil {
				a.Close()
				t.Fatal("accepted")
			}
		})
	}
}

func TestDefaultModelIsEmbedded(t *testing.T) {
	ta := startAgent(t, Config{NoEBPF: true})
	s := testmodel.Default(t, policy.Config{Device: policy.DeviceCPU})
	if ta.ModelVersion() != s.Version() {
		t.Fatalf("serving %q, embedded %q", ta.ModelVersion(), s.Version())
	}
}
