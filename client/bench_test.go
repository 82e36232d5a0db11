package client

import (
	"context"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/codec"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// The client's benchmarks run against a real agent in this process (the
// embedded default model on ONNX Runtime, procfs node signals, its guard),
// over real loopback QUIC:
//
//   - BenchmarkDecideLocal: ns and allocations per local decision (the
//     lookup and the queued report);
//   - BenchmarkTableUpdates: one op is 200 ms of tasks (three classes, the
//     mix of the shared scenarios, 2 000 a second) decided through
//     Client.Decide and finished with their outcomes, so the agent's queue,
//     class statistics and node snapshot move; it reports the table's
//     staleness at the local decisions (p50, p99), the share of decisions
//     taken locally, and the bytes of a table update on the wire as the
//     codec sends it (delta) and as a full frame of the same table.

func benchAgent(b *testing.B, maxStaleness time.Duration) *Client {
	b.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := agent.New(agent.Config{
		QUICAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", ExperienceDir: "-", FlamegraphDir: "-",
		NoEBPF: true, Device: policy.DeviceCPU, Workers: 4, Logger: quiet,
	})
	if err != nil {
		b.Fatalf("starting the agent: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	cl, err := Dial(context.Background(), a.QUICAddr().String(), Config{PinSHA256: a.Fingerprint(), ServerName: "localhost", LocalDecisions: true, MaxStaleness: maxStaleness, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close() })
	return cl
}

// benchClass is one class of the shared scenarios' mix.
type benchClass struct {
	name         string
	share, slaMs float64
	median, p99  float64 // lognormal cost, ms
}

var benchMix = []benchClass{
	{"realtime-check", 0.6, 20, 2, 8},
	{"scoring", 0.3, 200, 15, 60},
	{"batch-infer", 0.1, 2000, 200, 900},
}

func benchTask(rng *rand.Rand, id uint64) *wire.Task {
	u, c := rng.Float64(), benchMix[len(benchMix)-1]
	for _, k := range benchMix {
		if u < k.share {
			c = k
			break
		}
		u -= k.share
	}
	sigma := math.Log(c.p99/c.median) / 2.326
	cost := c.median * math.Exp(sigma*rng.NormFloat64())
	return &wire.Task{Id: id, Class: c.name, SlaMs: float32(c.slaMs), CostMs: float32(cost)}
}

// warm asks the agent about each class until the client decides all three
// locally.
func warm(b *testing.B, cl *Client) []*wire.Task {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 1))
	var tasks []*wire.Task
	for i := range 300 {
		t := benchTask(rng, uint64(i+1))
		if _, err := cl.Decide(ctx, []*wire.Task{t}); err != nil {
			b.Fatal(err)
		}
		tasks = append(tasks, t)
	}
	outs := make([]*wire.Outcome, len(tasks))
	for i, t := range tasks {
		outs[i] = &wire.Outcome{Id: t.GetId(), LatencyMs: t.GetCostMs(), ServiceMs: t.GetCostMs(), SlaMet: true}
	}
	if _, err := cl.ReportOutcomes(ctx, outs); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok := 0
		for _, t := range tasks[:30] {
			if _, _, hit := cl.local.lookupNow(t); hit {
				ok++
			}
		}
		if ok == 30 {
			return tasks
		}
		if time.Now().After(deadline) {
			b.Fatalf("the table answers %d of 30 warm tasks: %+v", ok, cl.LocalStats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func BenchmarkDecideLocal(b *testing.B) {
	// A staleness bound of a second: the loop decides millions of tasks a
	// second, whose reports keep the in-process agent too busy to push
	// its table at the default bound's pace (a third of the decisions
	// found it stale), and a stale table answers at once without deciding.
	// This benchmark measures the decision; BenchmarkTableUpdates measures
	// staleness at a real rate.
	cl := benchAgent(b, time.Second)
	tasks := warm(b, cl)[:30]
	before := cl.LocalStats() // the warm-up's own decisions and misses are not the loop's
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cl.DecideLocal(tasks[i%len(tasks)])
	}
	b.StopTimer()
	// A task the table does not answer returns at once (the caller would
	// then ask the agent): say why, so that ns/op is read with its mix.
	st := cl.LocalStats()
	share := func(after, before int64) float64 { return 100 * float64(after-before) / float64(b.N) }
	b.ReportMetric(share(st.Local, before.Local), "local-%")
	b.ReportMetric(share(st.Stale, before.Stale), "stale-%")
	b.ReportMetric(share(st.NoTable, before.NoTable), "no-table-%")
	b.ReportMetric(share(st.NotInTable, before.NotInTable), "not-in-table-%")
}

func BenchmarkTableUpdates(b *testing.B) {
	cl := benchAgent(b, 0)
	warm(b, cl)
	frames := watchTables(b, cl)
	start := cl.LocalStats()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runLoad(b, cl, uint64(1_000_000*(i+1)), 200*time.Millisecond, 500*time.Microsecond)
	}
	b.StopTimer()
	st := cl.LocalStats()
	local, remote := st.Local-start.Local, st.Remote-start.Remote
	b.ReportMetric(float64(st.StalenessP50.Microseconds())/1e3, "staleness-p50-ms")
	b.ReportMetric(float64(st.StalenessP99.Microseconds())/1e3, "staleness-p99-ms")
	b.ReportMetric(100*float64(local)/float64(max(local+remote, 1)), "local-%")
	full, delta := frames.stop()
	b.ReportMetric(full, "B/full-update")
	b.ReportMetric(delta, "B/delta-update")
}

// runLoad decides a task every gap for d through Decide, serves each for a
// tenth of its cost, and reports outcomes every 5 ms.
func runLoad(b *testing.B, cl *Client, idBase uint64, d, gap time.Duration) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(idBase, 7))
	var mu sync.Mutex
	var outs []*wire.Outcome
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
			case <-stop:
			}
			mu.Lock()
			batch := outs
			outs = nil
			mu.Unlock()
			if len(batch) > 0 {
				if _, err := cl.ReportOutcomes(ctx, batch); err != nil {
					b.Error(err)
				}
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	end := time.Now().Add(d)
	for id := idBase; time.Now().Before(end); id++ {
		task := benchTask(rng, id)
		if _, err := cl.Decide(ctx, []*wire.Task{task}); err != nil {
			b.Fatal(err)
		}
		svc := time.Duration(float64(task.GetCostMs()) * float64(time.Millisecond) / 10)
		time.AfterFunc(svc, func() {
			mu.Lock()
			outs = append(outs, &wire.Outcome{Id: task.GetId(), LatencyMs: task.GetCostMs() / 10, ServiceMs: task.GetCostMs() / 10, SlaMet: true})
			mu.Unlock()
		})
		time.Sleep(gap)
	}
	time.Sleep(25 * time.Millisecond) // the last outcomes
	close(stop)
	wg.Wait()
}

// tableFrames is a second table subscription on the client's connection
// that measures each update: its frame as sent (a delta of the one before,
// or full), and the full frame of the same table.
type tableFrames struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu                   sync.Mutex
	fullBytes, deltaSum  int
	updates, deltaFrames int
}

func watchTables(b *testing.B, cl *Client) *tableFrames {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tf := &tableFrames{cancel: cancel, done: make(chan struct{})}
	s, err := cl.session(ctx)
	if err != nil {
		b.Fatal(err)
	}
	str, err := s.conn.OpenStreamSync(ctx)
	if err != nil {
		b.Fatal(err)
	}
	fw, _ := wire.NewFrameWriter(str, cl.codecOpts()...)
	fr, _ := wire.NewFrameReader(str, 0)
	if err := fw.Write(&wire.Envelope{Body: &wire.Envelope_Subscribe{Subscribe: cl.local.subscribe()}}); err != nil {
		b.Fatal(err)
	}
	full, err := codec.NewEncoder(codec.WithLevel(1), codec.WithKeyframeInterval(1))
	if err != nil {
		b.Fatal(err)
	}
	context.AfterFunc(ctx, func() { str.CancelRead(0); str.Close() })
	go func() {
		defer close(tf.done)
		var env wire.Envelope
		var out []byte
		for {
			if err := fr.Read(&env); err != nil {
				return
			}
			n, kind := fr.LastFrame()
			payload, _ := proto.MarshalOptions{Deterministic: true}.Marshal(&env)
			out, _ = full.EncodeAll(payload, out[:0])
			tf.mu.Lock()
			tf.updates++
			tf.fullBytes += len(out)
			if kind == codec.KindDelta {
				tf.deltaFrames++
				tf.deltaSum += n
			}
			tf.mu.Unlock()
		}
	}()
	return tf
}

// stop ends the subscription and returns the mean bytes of an update as a
// full frame and as the delta frames sent.
func (tf *tableFrames) stop() (full, delta float64) {
	tf.cancel()
	<-tf.done
	tf.mu.Lock()
	defer tf.mu.Unlock()
	return float64(tf.fullBytes) / float64(max(tf.updates, 1)), float64(tf.deltaSum) / float64(max(tf.deltaFrames, 1))
}

// lookupNow is what the current table answers for t now, without deciding
// it (nothing is recorded or reported).
func (l *localDecider) lookupNow(t *wire.Task) (level, cell uint32, ok bool) {
	tb := l.table.Load()
	if tb == nil || tb.age(time.Now()) > l.c.cfg.MaxStaleness {
		return 0, 0, false
	}
	return tb.lookup(t, l.queue(tb))
}
