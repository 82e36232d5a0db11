package train

import (
	"errors"
	"strings"
	"testing"
)

const goodV2 = `{"name":"v2","seed":1,"duration_s":60,"workers":4,"node":{"cpus":2},
 "arrival":{"process":"poisson","rate_per_s":50},
 "interference":[{"kind":"cpu","at_s":10,"for_s":20,"threads":2},{"kind":"io","at_s":30,"for_s":10,"writers":4}],
 "classes":[{"name":"a","share":0.5,"sla_ms":20,"cost_ms":{"dist":"constant","value":2}},
            {"name":"b","share":0.5,"sla_ms":200,"io_share":0.4,"cost_ms":{"dist":"exponential","mean":15}}]}`

func TestParseV2ScenarioRejects(t *testing.T) {
	sc, err := ParseScenario([]byte(goodV2))
	if err != nil {
		t.Fatalf("good v2 scenario refused: %v", err)
	}
	if sc.NodeCPUs() != 2 || !sc.HasNode() || sc.Classes[1].IOShare != 0.4 {
		t.Fatalf("parsed %+v", sc)
	}
	cases := []struct{ name, old, new, want string }{
		{"negative threads", `"threads":2`, `"threads":-2`, "interference[0]: threads must be in [1, 4096], got -2"},
		{"io_share above 1", `"io_share":0.4`, `"io_share":1.5`, `class "b": io_share must be in [0, 1], got 1.5`},
		{"unknown kind", `"kind":"io"`, `"kind":"gpu"`, `interference[1]: unknown kind "gpu"`},
		{"after the end", `"at_s":30`, `"at_s":75`, "interference[1]: at_s 75 starts after the run ends (duration_s 60)"},
		{"zero cpus", `"cpus":2`, `"cpus":0`, "node.cpus must be in [1, 4096], got 0"},
		{"writers on cpu", `"threads":2`, `"threads":2,"writers":1`, `interference[0]: writers does not belong to kind "cpu"`},
		{"missing writers", `"writers":4`, `"writers":0`, "interference[1]: writers must be in [1, 4096], got 0"},
		{"negative for", `"for_s":10`, `"for_s":-1`, "interference[1]: for_s must be positive"},
		{"unknown field", `"cpus":2`, `"cpus":2,"gpus":1`, "unknown field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(goodV2, c.old, c.new, 1)
			if src == goodV2 {
				t.Fatal("test case does not change the scenario")
			}
			_, err := ParseScenario([]byte(src))
			if err == nil || !errors.Is(err, ErrBadScenario) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an ErrBadScenario saying %q", err, c.want)
			}
		})
	}
}

func TestNeighbourLoadAddsOverlappingEpisodes(t *testing.T) {
	sc := mustParseScenario(t, strings.Replace(goodV2, `"at_s":30`, `"at_s":15`, 1))
	// cpu: 2 threads over [10, 30); io: 4 writers over [15, 25).
	for _, c := range []struct {
		t                float64
		threads, writers int
	}{{5, 0, 0}, {12, 2, 0}, {20, 2, 4}, {25, 2, 0}, {29.99, 2, 0}, {30, 0, 0}} {
		th, w := sc.NeighbourLoad(c.t)
		if th != c.threads || w != c.writers {
			t.Errorf("t=%v: %d threads, %d writers; want %d, %d", c.t, th, w, c.threads, c.writers)
		}
	}
}

// A node does I/O when a class has an I/O share or an episode writes; CPU
// neighbours alone write nothing.
func TestDoesIOIsAClassShareOrAWriter(t *testing.T) {
	for _, c := range []struct {
		name, old, new string
		want           bool
	}{
		{"share and writers", "", "", true},
		{"writers only", `"io_share":0.4`, `"io_share":0`, true},
		{"share only", `{"kind":"io","at_s":30,"for_s":10,"writers":4}`, `{"kind":"cpu","at_s":30,"for_s":10,"threads":1}`, true},
	} {
		sc := mustParseScenario(t, strings.Replace(goodV2, c.old, c.new, 1))
		if got := sc.DoesIO(); got != c.want {
			t.Errorf("%s: DoesIO %v, want %v", c.name, got, c.want)
		}
	}
	none := strings.Replace(strings.Replace(goodV2, `"io_share":0.4`, `"io_share":0`, 1),
		`{"kind":"io","at_s":30,"for_s":10,"writers":4}`, `{"kind":"cpu","at_s":30,"for_s":10,"threads":1}`, 1)
	if sc := mustParseScenario(t, none); sc.DoesIO() || !sc.HasNode() {
		t.Errorf("CPU neighbours and no I/O share: DoesIO %v, HasNode %v; want false, true", sc.DoesIO(), sc.HasNode())
	}
}
