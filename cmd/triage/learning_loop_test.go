package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/defaultmodel"
	"github.com/triage-agent/triage/wire"
)

// startTestAgent runs a real agent in-process on loopback ports the kernel
// picks and waits until /readyz answers 200; stop ends it.
func startTestAgent(t *testing.T, cfg agent.Config) (a *agent.Agent, stop func()) {
	t.Helper()
	cfg.QUICAddr, cfg.AdminAddr, cfg.FlamegraphDir, cfg.Device = "127.0.0.1:0", "127.0.0.1:0", "-", "cpu"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + a.AdminAddr().String() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if i > 500 {
			cancel()
			<-done
			t.Fatal("agent not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return a, func() { cancel(); <-done }
}

// runTestAgent starts an agent without eBPF and dials it.
func runTestAgent(t *testing.T, cfg agent.Config) (*agent.Agent, *client.Client, func()) {
	t.Helper()
	cfg.NoEBPF = true
	a, stop := startTestAgent(t, cfg)
	cl, err := client.Dial(context.Background(), a.QUICAddr().String(), client.Config{PinSHA256: a.Fingerprint(), ServerName: "localhost"})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	return a, cl, func() { cl.Close(); stop() }
}

// Learning from production, end to end: an agent logs experience from
// outcomes; `triage train --experience` fine-tunes the serving model on it;
// a second agent runs the result in shadow and promotes it with a hot reload.
func TestExperienceFineTuneShadowPromote(t *testing.T) {
	dir := t.TempDir()
	expDir := filepath.Join(dir, "experience")
	_, cl, stop := runTestAgent(t, agent.Config{ExperienceDir: expDir})
	ctx := context.Background()
	classes := []struct {
		name     string
		sla, lat float32
	}{{"realtime-check", 20, 35}, {"scoring", 200, 40}, {"batch-infer", 2000, 900}}
	id := uint64(0)
	for round := 0; round < 20; round++ {
		var batch []*wire.Task
		for i := 0; i < 30; i++ {
			c := classes[i%3]
			id++
			batch = append(batch, &wire.Task{Id: id, Class: c.name, SlaMs: c.sla, CostMs: c.sla / 8})
		}
		resp, err := cl.Decide(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		var outs []*wire.Outcome
		for i, d := range resp.GetDecisions() {
			c := classes[i%3]
			lat := c.lat / float32(1+d.GetPriority())
			outs = append(outs, &wire.Outcome{Id: d.GetId(), LatencyMs: lat, SlaMet: lat <= c.sla})
		}
		if _, err := cl.ReportOutcomes(ctx, outs); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	st, err := experience.ReadDirWith(expDir, experience.ReadOptions{}, nil)
	if err != nil || st.Records != 600 {
		t.Fatalf("experience: %+v %v", st, err)
	}

	cand := filepath.Join(dir, "candidate.onnx")
	if err := runFineTune(expDir, "../../policy/defaultmodel/model.onnx", cand, 1, 2, "ft-test"); err != nil {
		t.Fatal(err)
	}

	// The embedded default is an ensemble with training ranges: the
	// candidate is its mean network, fine-tuned, and keeps the ranges the
	// guard reads.
	initMeta, err := policy.ReadMetadata(defaultmodel.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	candBytes, err := os.ReadFile(cand)
	if err != nil {
		t.Fatal(err)
	}
	candNet, candMeta, err := policy.ReadONNX(candBytes)
	if err != nil || policy.CheckSchema(candMeta) != nil {
		t.Fatalf("candidate: %v / schema %v", err, policy.CheckSchema(candMeta))
	}
	if initMeta.Ranges == nil || candMeta.Ranges == nil || candMeta.Ranges.Lo != initMeta.Ranges.Lo || candMeta.Ranges.Hi != initMeta.Ranges.Hi {
		t.Errorf("candidate feature ranges %+v, want the init's %+v", candMeta.Ranges, initMeta.Ranges)
	}
	if candNet.NumMembers() != 1 {
		t.Errorf("candidate has %d members, want the plain network fine-tuning makes", candNet.NumMembers())
	}

	a, cl2, stop2 := runTestAgent(t, agent.Config{ExperienceDir: "-", ShadowModelPath: cand})
	defer stop2()
	before := a.ModelVersion()
	for i := 0; i < 5; i++ {
		if _, err := cl2.Decide(ctx, []*wire.Task{{Id: uint64(10_000 + i), Class: "scoring", SlaMs: 200, CostMs: 20}}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := a.Promote()
	if err != nil || v != "ft-test" || before == "ft-test" {
		t.Fatalf("promote: %q %v (before %q)", v, err, before)
	}
	resp, err := cl2.Decide(ctx, []*wire.Task{{Id: 20_000, Class: "scoring", SlaMs: 200, CostMs: 20}})
	if err != nil || resp.GetModel() != "ft-test" {
		t.Fatalf("after promotion: %v %v", resp.GetModel(), err)
	}
}
