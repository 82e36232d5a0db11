package train

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/policy"
)

func TestFineTuneLearnsLoggedRewards(t *testing.T) {
	// Records where priority 4 always earned 1 and every other priority 0:
	// after fine-tuning, the network must prefer 4 on those states.
	rng := rand.New(rand.NewPCG(1, 1))
	var recs []experience.Record
	for i := 0; i < 3000; i++ {
		var s policy.State
		for k := range s {
			s[k] = float32(rng.Float64())
		}
		a := uint8(rng.IntN(policy.NumActions))
		r := float32(0)
		if a == 4 {
			r = 1
		}
		recs = append(recs, experience.Record{State: s, Next: s, Action: a, Reward: r})
	}
	bad := experience.Record{Action: 9}
	bad2 := experience.Record{Action: 1}
	bad2.State[3] = float32(math.NaN())
	recs = append(recs, bad, bad2)
	init := newMLP(rand.New(rand.NewPCG(2, 2)), []int{16})
	before := init.Layers[0].W[0]
	tuned, st, err := FineTune(init, recs, DQNConfig{Seed: 4, LR: 3e-3}, 6)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 3000 || st.Skipped != 2 {
		t.Fatalf("records %d skipped %d, want 3000 and 2", st.Records, st.Skipped)
	}
	if init.Layers[0].W[0] != before {
		t.Fatal("FineTune modified its initial model")
	}
	if st.LossLast >= st.LossFirst {
		t.Fatalf("loss did not fall: %.4f -> %.4f", st.LossFirst, st.LossLast)
	}
	pick4 := 0
	for i := 0; i < 200; i++ {
		var q [policy.NumActions]float32
		tuned.Forward(&recs[i].State, &q, nil)
		if policy.Argmax(&q) == 4 {
			pick4++
		}
	}
	if pick4 < 190 {
		t.Fatalf("fine-tuned model picks 4 on %d of 200 states, want nearly all", pick4)
	}
	if _, _, err := FineTune(init, []experience.Record{bad}, DQNConfig{}, 1); !errors.Is(err, ErrNoExperience) {
		t.Fatalf("all-bad records: %v, want ErrNoExperience", err)
	}
}

// The records come back through the agent's real log format: what
// `triage train --experience DIR` reads.
func TestFineTuneFromExperienceLog(t *testing.T) {
	dir := t.TempDir()
	w, err := experience.Open(dir, experience.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 500; i++ {
		r := experience.Record{TaskID: "t", Class: "c", Action: uint8(i % policy.NumActions), Phase: "steady", Model: "m"}
		for k := range r.State {
			r.State[k] = float32(rng.Float64())
		}
		r.Next = r.State
		if r.Action == 0 {
			r.Reward = 1
		}
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var recs []experience.Record
	if err := experience.ReadDir(dir, func(r experience.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 500 {
		t.Fatalf("read %d records, wrote 500", len(recs))
	}
	init := newMLP(rand.New(rand.NewPCG(6, 6)), []int{16})
	tuned, st, err := FineTune(init, recs, DQNConfig{Seed: 2, LR: 3e-3}, 20)
	if err != nil {
		t.Fatal(err)
	}
	if st.LossLast >= st.LossFirst {
		t.Fatalf("loss did not fall: %.4f -> %.4f", st.LossFirst, st.LossLast)
	}
	var q [policy.NumActions]float32
	tuned.Forward(&recs[0].State, &q, nil)
	if policy.Argmax(&q) != 0 {
		t.Fatalf("fine-tuned model prefers %d, the log rewarded 0: %v", policy.Argmax(&q), q)
	}
}
