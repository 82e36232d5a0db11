package agentproc

import "testing"

// Samples keep their labels as written, a label value may hold a space,
// and comments and unparsable lines are dropped.
func TestParseMetrics(t *testing.T) {
	m := ParseMetrics(`# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 42
triage_probe_attached{probe="runqlat"} 1
triage_probe_attached{probe="tcp retransmit"} 1
triage_probe_attached{probe="blkio"} 0
triage_feature_source{feature="cpu",source="ebpf"} 1e0
broken_line_without_value
bad_value NaNx
`)
	want := Metrics{
		"go_goroutines":                                      42,
		`triage_probe_attached{probe="runqlat"}`:             1,
		`triage_probe_attached{probe="tcp retransmit"}`:      1,
		`triage_probe_attached{probe="blkio"}`:               0,
		`triage_feature_source{feature="cpu",source="ebpf"}`: 1,
	}
	if len(m) != len(want) {
		t.Fatalf("got %v, want %v", m, want)
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if got := m.SumPrefix("triage_probe_attached{"); got != 2 {
		t.Errorf("probes attached = %v, want 2", got)
	}
}
