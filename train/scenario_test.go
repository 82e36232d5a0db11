package train

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSharedAndOwnScenariosParse(t *testing.T) {
	files, _ := filepath.Glob("../../shared/scenarios/*.json")
	own, _ := filepath.Glob("../testdata/scenarios/*.json")
	files = append(files, own...)
	if len(own) < 5 {
		t.Fatalf("want at least 5 training scenarios in testdata/scenarios, have %d", len(own))
	}
	for _, f := range files {
		sc, err := LoadScenario(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if sc.MeanCostMs() <= 0 {
			t.Errorf("%s: mean cost %v", f, sc.MeanCostMs())
		}
	}
}

func TestSharedSteadyLoad(t *testing.T) {
	sc, err := LoadScenario("../../shared/scenarios/steady.json")
	if err != nil {
		t.Skipf("shared scenarios not on this machine: %v", err)
	}
	// The README: mean cost about 31 ms, so 4 workers serve about 127 tasks/s.
	if m := sc.MeanCostMs(); m < 30 || m > 33 {
		t.Errorf("mean cost %.2f ms, README says about 31", m)
	}
}

const goodScenario = `{"name":"x","seed":1,"duration_s":10,"workers":2,
 "arrival":{"process":"poisson","rate_per_s":10},
 "classes":[{"name":"a","share":0.5,"sla_ms":10,"cost_ms":{"dist":"constant","value":1}},
            {"name":"b","share":0.5,"sla_ms":100,"cost_ms":{"dist":"exponential","mean":5},"tenant":"t","weight":2}]}`

func TestParseScenarioRejects(t *testing.T) {
	if _, err := ParseScenario([]byte(goodScenario)); err != nil {
		t.Fatalf("good scenario refused: %v", err)
	}
	cases := []struct{ name, old, new, want string }{
		{"unknown field", `"seed":1`, `"seed":1,"sede":2`, "unknown field"},
		{"shares", `"share":0.5,"sla_ms":100`, `"share":0.4,"sla_ms":100`, "shares add up"},
		{"pareto alpha", `{"dist":"exponential","mean":5}`, `{"dist":"pareto","min":1,"alpha":1}`, "alpha must be > 1"},
		{"negative sla", `"sla_ms":10`, `"sla_ms":-10`, "sla_ms must be positive"},
		{"negative cost", `"value":1`, `"value":-1`, "must be a positive number"},
		{"missing param", `{"dist":"exponential","mean":5}`, `{"dist":"exponential"}`, "missing mean"},
		{"foreign param", `{"dist":"exponential","mean":5}`, `{"dist":"exponential","mean":5,"alpha":2}`, "does not belong"},
		{"unknown dist", `"dist":"constant"`, `"dist":"gamma"`, "unknown dist"},
		{"missing name", `"name":"x",`, ``, "missing name"},
		{"zero workers", `"workers":2`, `"workers":0`, "workers must be"},
		{"process", `"poisson"`, `"uniform"`, "not supported"},
		{"burst", `"rate_per_s":10}`, `"rate_per_s":10,"bursts":[{"at_s":1,"for_s":-1,"factor":2}]}`, "for_s must be positive"},
		{"lognormal order", `{"dist":"constant","value":1}`, `{"dist":"lognormal","median":5,"p99":2}`, "must be above median"},
		{"duplicate class", `"name":"b"`, `"name":"a"`, "appears twice"},
		{"trailing", goodScenario, goodScenario + `{}`, "trailing data"},
		{"huge", `"rate_per_s":10`, `"rate_per_s":1000000,"ramp_to_per_s":1000000`, "arrivals, at most"},
		{"type", `"workers":2`, `"workers":"two"`, "cannot unmarshal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(goodScenario, c.old, c.new, 1)
			if c.name == "huge" {
				src = strings.Replace(src, `"duration_s":10`, `"duration_s":86400`, 1)
			}
			if src == goodScenario && c.name != "trailing" {
				t.Fatalf("test case does not change the scenario")
			}
			_, err := ParseScenario([]byte(src))
			if err == nil || !errors.Is(err, ErrBadScenario) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an ErrBadScenario saying %q", err, c.want)
			}
		})
	}
}

func TestMalformedFile(t *testing.T) {
	_, err := LoadScenario("testdata/malformed.json")
	if err == nil || !errors.Is(err, ErrBadScenario) || !strings.Contains(err.Error(), "malformed.json") {
		t.Fatalf("got %v, want an ErrBadScenario naming the file", err)
	}
	if _, err := LoadScenario("testdata/does-not-exist.json"); err == nil {
		t.Fatal("missing file accepted")
	}
}

// The workloads outside the generator's range, and those written to check
// a rule on this machine's real workers, parse, are named after their
// files, and no training recipe reads them.
func TestOutsideScenariosParseAndAreNotTrainedOn(t *testing.T) {
	for _, dir := range []struct {
		path string
		want int
	}{{"testdata/outside", 11}, {"testdata/realcheck", 1}} {
		files, _ := filepath.Glob("../" + dir.path + "/*.json")
		if len(files) < dir.want {
			t.Fatalf("want the %d files in %s, have %d", dir.want, dir.path, len(files))
		}
		for _, f := range files {
			sc, err := LoadScenario(f)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if filepath.Base(f) != sc.Name+".json" {
				t.Errorf("%s: name %q not the file's", f, sc.Name)
			}
		}
		notReadByTraining(t, dir.path)
	}
}

// notReadByTraining fails if a training recipe or the Makefile names dir.
func notReadByTraining(t *testing.T, dir string) {
	t.Helper()
	for _, script := range []string{"../scripts/train-candidate-model.sh", "../scripts/train-default-model.sh", "../Makefile"} {
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), dir) {
			t.Errorf("%s reads %s", script, dir)
		}
	}
}

// The held-out hand-written files (testdata/validation) parse, each offers
// its workers between half and one and a half times what they serve at
// the start, and no training recipe reads them: they report
// generalisation, so a model must never have seen them.
func TestValidationScenariosParseAndAreNotTrainedOn(t *testing.T) {
	files, _ := filepath.Glob("../testdata/validation/*.json")
	if len(files) < 8 {
		t.Fatalf("want the 8 held-out files in testdata/validation, have %d", len(files))
	}
	names := map[string]bool{}
	for _, f := range files {
		sc, err := LoadScenario(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if names[sc.Name] || filepath.Base(f) != sc.Name+".json" {
			t.Errorf("%s: name %q repeated or not the file's", f, sc.Name)
		}
		names[sc.Name] = true
		if load := sc.Arrival.RatePerS * sc.MeanCostMs() / 1000 / float64(sc.Workers); load < 0.45 || load > 1.55 {
			t.Errorf("%s: offers %.2f of its workers at the start, outside the 50%%–150%% the files span", f, load)
		}
	}
	notReadByTraining(t, "testdata/validation")
}
