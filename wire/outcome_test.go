package wire

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestCheckOutcome(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		o    *Outcome
		want string // "" = valid
	}{
		{&Outcome{Id: 1, LatencyMs: 3.5, SlaMet: true}, ""},
		{&Outcome{Id: 2, LatencyMs: 30, ServiceMs: 2}, ""},
		{&Outcome{Id: 3, LatencyMs: nan}, "outcome 3: latency_ms NaN is not a duration"},
		{&Outcome{Id: 4, LatencyMs: -1}, "outcome 4: latency_ms -1 is not a duration"},
		{&Outcome{Id: 5, LatencyMs: inf}, "latency_ms +Inf"},
		{&Outcome{Id: 6, LatencyMs: 4, ServiceMs: -2}, "outcome 6: service_ms -2 is not a duration"},
		{&Outcome{Id: 7, LatencyMs: 4, ServiceMs: nan}, "service_ms NaN"},
	} {
		err := CheckOutcome(c.o)
		if c.want == "" {
			if err != nil {
				t.Errorf("outcome %d: %v, want valid", c.o.Id, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("outcome %d: error %v, want %q", c.o.Id, err, c.want)
		}
	}
}

func TestOutcomeJSONCarriesServiceTime(t *testing.T) {
	var rep OutcomeReportJSON
	body := `{"outcomes":[{"id":1,"latency_ms":30,"sla_met":true,"service_ms":2.5},{"id":2,"latency_ms":4,"sla_met":true}]}`
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatal(err)
	}
	outs, err := OutcomesFromJSON(rep.Outcomes)
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].GetServiceMs() != 2.5 || outs[0].GetLatencyMs() != 30 || !outs[0].GetSlaMet() {
		t.Errorf("first outcome %v", outs[0])
	}
	if outs[1].GetServiceMs() != 0 {
		t.Errorf("absent service_ms decoded as %v, want 0 (unknown)", outs[1].GetServiceMs())
	}
}
