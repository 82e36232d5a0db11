package train

import "testing"

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
