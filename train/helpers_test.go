package train

import (
	"sort"
	"testing"
)

// mustParseScenario is the scenario src describes; a test's own scenario
// that does not parse fails the test.
func mustParseScenario(t testing.TB, src string) *Scenario {
	t.Helper()
	sc, err := ParseScenario([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// mostBusyAfter is the most finished tasks of out that were in service at
// once, at a start or finish at or after fromMs.
func mostBusyAfter(out []Outcome, fromMs float64) int {
	type edge struct {
		at    float64
		delta int
	}
	var edges []edge
	for i := range out {
		if out[i].Finished {
			edges = append(edges, edge{out[i].StartMs, 1}, edge{out[i].FinishMs, -1})
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta // a finish frees its worker before a start takes it
	})
	running, most := 0, 0
	for _, e := range edges {
		running += e.delta
		if e.at >= fromMs {
			most = max(most, running)
		}
	}
	return most
}
