package soak

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/bench/measure"
)

// The JSON line has exactly the keys, in its order, then the
// offered and achieved rates.
func TestResultJSONKeys(t *testing.T) {
	b, err := (&Result{DurationS: 1.5, P99Us: 10}).JSON()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"duration_s", "decisions", "decide_errors", "outcomes", "experience_records", "lost_records",
		"rss_mib_start", "rss_mib_end", "rss_growth_pct", "goroutines_start", "goroutines_end", "fds_start", "fds_end", "p99_us",
		"offered_per_s", "decisions_per_s"}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	var got []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, k.(string))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("keys %v\nwant %v", got, want)
	}
}

// The histogram's quantiles are measure.Quantile's at a microsecond's
// resolution, past its one-second range too.
func TestLatencyHistQuantiles(t *testing.T) {
	h := newLatencyHist()
	rng := rand.New(rand.NewPCG(1, 2))
	var us []int64
	for range 20000 {
		d := time.Duration(rng.ExpFloat64()*300) * time.Microsecond
		if rng.IntN(500) == 0 {
			d = time.Duration(1+rng.IntN(3)) * time.Second
		}
		h.observe(d)
		us = append(us, d.Microseconds())
	}
	slices.Sort(us)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		if got, want := h.quantileUs(q), float64(measure.Quantile(us, q)); got != want {
			t.Errorf("q%v: %v µs, measure.Quantile says %v", q, got, want)
		}
	}
	if (&latencyHist{}).total.Load() != 0 || newLatencyHist().quantileUs(0.99) != 0 {
		t.Error("an empty histogram has a quantile")
	}
}

func TestIDSet(t *testing.T) {
	var s idSet
	ids := []uint64{0, 63, 64, 1000, 1 << 20}
	for _, id := range ids {
		s.add(id)
	}
	var got []uint64
	s.each(func(id uint64) { got = append(got, id) })
	if !reflect.DeepEqual(got, ids) || s.has(1) || !s.has(1000) || s.has(1<<30) {
		t.Fatalf("set holds %v", got)
	}
}

// Start and end are medians of the windows after the warm-up and at the
// end, so one odd sample does not decide them.
func TestSummarize(t *testing.T) {
	var samples []Sample
	for i := range 60 {
		s := Sample{At: time.Duration(i) * time.Second, RSSMiB: 100, Goroutines: 50, FDs: 20, HeapMiB: 10}
		if i >= 30 {
			s.RSSMiB = 104
		}
		if i == 12 || i == 55 {
			s.RSSMiB, s.Goroutines, s.FDs = 500, 900, 90
		}
		if i < 10 {
			s.RSSMiB = 10 // warming up: not counted
		}
		samples = append(samples, s)
	}
	var r Result
	summarize(&r, samples, 10*time.Second)
	if r.RSSMiBStart != 100 || r.RSSMiBEnd != 104 || r.RSSGrowthPct != 4 || r.GoroutinesStart != 50 || r.GoroutinesEnd != 50 || r.FDsEnd != 20 {
		t.Fatalf("summary %+v", r)
	}
	if r.Detail.RSSMiBPeak != 500 {
		t.Errorf("peak %v", r.Detail.RSSMiBPeak)
	}
}

func TestConfigDefaultsAndBounds(t *testing.T) {
	var c Config
	if err := c.defaults(); err != nil || c.Duration != 10*time.Minute || c.Warmup != time.Minute || c.Rate != 5000 || c.Clients != 16 ||
		c.Subscribers != 8 || c.Churn != 50 || c.ReloadEvery != 30*time.Second {
		t.Fatalf("defaults %+v: %v", c, err)
	}
	for _, bad := range []Config{
		{Duration: time.Minute, Warmup: time.Minute},
		{Clients: 1000},
		{Batch: 5000},
		{Rate: 4, Clients: 16},
		{Churn: 100000},
	} {
		if err := bad.defaults(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if got := experienceCap(Config{Rate: 5000, Duration: 10 * time.Minute}); got < 5000*600*300 {
		t.Errorf("experience cap %d is under what ten minutes at 5,000/s write", got)
	}
}
