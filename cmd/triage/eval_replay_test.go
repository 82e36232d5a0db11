package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/internal/testmodel"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/guard"
)

// The replay decides every logged state with the model through ONNX
// Runtime and counts, per class, the logged levels, the replayed ones, how
// often they agree and how often the guard (unanimity asked, no range
// check) would decide. Class "same" logs the network's own answer on each
// state, class "other" a different level, so the agreement column must
// read 100% and 0%; the counts cover every record, over more than one
// batch.
func TestReplayCountsLoggedAndReplayedLevelsPerClass(t *testing.T) {
	sess := testmodel.Default(t, policy.Config{})
	const n = replayBatch + 44
	states := make([]policy.State, n)
	for i := range states {
		states[i][policy.FeatSLA] = float32(i%10) / 10
		states[i][policy.FeatCost] = float32(i%7) / 7
		states[i][policy.FeatCPUUtil] = float32(i%5) / 4
	}
	own := make([]policy.Decision, n)
	if err := sess.Decide(states, own); err != nil {
		t.Fatal(err)
	}
	g, err := guard.Named(guard.DefaultController, guard.Config{MinAgreement: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := newReplayer(sess, g)
	var wantLogged [2][policy.NumActions]int
	for i := range states {
		for c, class := range []string{"same", "other"} {
			level := own[i].Priority
			if class == "other" {
				level = (level + 1) % policy.NumActions
			}
			wantLogged[c][level]++
			if err := p.add(experience.Record{TaskID: fmt.Sprint(i), Class: class, State: states[i], Action: uint8(level)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var buf bytes.Buffer
	if err := p.write(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	var replayed [policy.NumActions]int
	unsure := 0
	for i := range own {
		replayed[own[i].Priority]++
		if g.Unsure(&own[i]) != guard.Network {
			unsure++
		}
	}
	// A unanimous guard over states spread this wide takes some, not all.
	if unsure == 0 || unsure == n {
		t.Fatalf("setup: the guard would decide %d of %d states, want some", unsure, n)
	}
	u := 100 * float64(unsure) / n
	for c, want := range []string{
		fmt.Sprintf("| same | %d | %s | %s | 100.0%% | %.1f%% |", n, levelCounts(wantLogged[0]), levelCounts(replayed), u),
		fmt.Sprintf("| other | %d | %s | %s | 0.0%% | %.1f%% |", n, levelCounts(wantLogged[1]), levelCounts(replayed), u),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("class %d: want the row\n%s\nin:\n%s", c, want, out)
		}
	}
	if !strings.Contains(out, sess.Version()) {
		t.Errorf("the table does not name the replayed model %s:\n%s", sess.Version(), out)
	}
}
