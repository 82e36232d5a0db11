package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/policy"
)

// `triage eval --states-from`: the simulated dqn's states beside an
// experience log's, with the features whose logged median leaves the
// simulated band marked. The log here holds states with the CPU saturated
// and no queue, which the one-class scenario at a low load never sees.
func TestEvalStatesFromMarksTheFeaturesOutsideTheSimulation(t *testing.T) {
	dir := t.TempDir()
	sc := writeOneClassScenario(t, dir, "states", 5)
	exp := filepath.Join(dir, "experience")
	w, err := experience.Open(exp, experience.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		r := experience.Record{TaskID: fmt.Sprint(i), Class: "a", Phase: "steady", Model: "m"}
		r.State[policy.FeatCPUUtil] = 1
		r.State[policy.FeatSLA] = 0.38 // 30 ms, as the scenario's
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := captureStdout(t, func() error {
		return runEval([]string{"--scenario", sc, "--states-from", exp, "--per-class=false"})
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	row := func(f int) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, fmt.Sprintf("| %d %s |", f, policy.FeatureNames[f])) {
				return l
			}
		}
		t.Fatalf("no row for feature %d in:\n%s", f, out)
		return ""
	}
	if l := row(policy.FeatCPUUtil); !strings.Contains(l, "**outside**") {
		t.Errorf("a saturated CPU against a light simulation is not marked: %s", l)
	}
	if l := row(policy.FeatAccelMem); !strings.Contains(l, "within") {
		t.Errorf("a feature zero on both sides is marked: %s", l)
	}
	if !strings.Contains(out, "50 records") {
		t.Errorf("the record count is missing:\n%s", out)
	}
}

func TestEvalStatesFromRefusesWhatItCannotCompare(t *testing.T) {
	dir := t.TempDir()
	sc := writeScenario(t, dir, `{"name":"states","seed":3,"duration_s":2,"workers":2,
	 "arrival":{"process":"poisson","rate_per_s":20},
	 "classes":[{"name":"a","share":1,"sla_ms":30,"cost_ms":{"dist":"constant","value":3}}]}`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", sc + "," + sc, "--states-from", dir}, "one --scenario"},
		{[]string{"--scenario", sc, "--states-from", filepath.Join(dir, "empty")}, "--states-from"},
	} {
		os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
		_, err := captureStdout(t, func() error { return runEval(c.args) })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error naming %q", c.args, err, c.want)
		}
	}
}
