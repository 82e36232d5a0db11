package train

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func f(v float64) *float64 { return &v }

func TestDistSamplesMatchParameters(t *testing.T) {
	cases := []struct {
		d                 Dist
		median, mean, p99 float64
	}{
		{Dist{Kind: "lognormal", Median: f(2), P99: f(8)}, 2, 2 * math.Exp(math.Pow(math.Log(4)/z99, 2)/2), 8},
		{Dist{Kind: "exponential", Mean_: f(10)}, 10 * math.Ln2, 10, 10 * math.Log(100)},
		{Dist{Kind: "pareto", Min: f(5), Alpha: f(3)}, 5 * math.Pow(2, 1.0/3), 7.5, 5 * math.Pow(100, 1.0/3)},
		{Dist{Kind: "constant", Value: f(3)}, 3, 3, 3},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		if err := c.d.validate(); err != nil {
			t.Fatalf("%s: %v", c.d.Kind, err)
		}
		const n = 40000
		xs := make([]float64, n)
		sum := 0.0
		for i := range xs {
			xs[i] = c.d.Sample(r)
			sum += xs[i]
		}
		slices.Sort(xs)
		got := map[string][2]float64{
			"median": {quantileSorted(xs, 0.5), c.median},
			"mean":   {sum / n, c.mean},
			"p99":    {quantileSorted(xs, 0.99), c.p99},
		}
		for what, g := range got {
			if math.Abs(g[0]-g[1]) > 0.05*g[1] {
				t.Errorf("%s %s: sampled %.4f, want %.4f ±5%%", c.d.Kind, what, g[0], g[1])
			}
		}
		if m := c.d.Mean(); math.Abs(m-c.mean) > 1e-9*c.mean {
			t.Errorf("%s Mean() = %v, want %v", c.d.Kind, m, c.mean)
		}
		if q := c.d.Quantile(0.99); math.Abs(q-c.p99) > 1e-6*c.p99 {
			t.Errorf("%s Quantile(0.99) = %v, want %v", c.d.Kind, q, c.p99)
		}
	}
}

func TestArrivalRateFollowsBurstsAndRamp(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"r","seed":5,"duration_s":100,"workers":2,
	 "arrival":{"process":"poisson","rate_per_s":100,"ramp_to_per_s":300,"bursts":[{"at_s":10,"for_s":5,"factor":4}]},
	 "classes":[{"name":"a","share":1,"sla_ms":10,"cost_ms":{"dist":"constant","value":1}}]}`)
	tasks := sc.Arrivals(sc.Seed)
	count := func(lo, hi float64) float64 {
		n := 0
		for _, tk := range tasks {
			if tk.ArrivalMs >= lo*1000 && tk.ArrivalMs < hi*1000 {
				n++
			}
		}
		return float64(n) / (hi - lo)
	}
	checks := []struct {
		lo, hi, want float64
	}{
		{0, 10, 110},      // ramp 100 → 120 over the first 10 s
		{10, 15, 4 * 125}, // burst ×4 on a rate of 120..130
		{90, 100, 290},    // ramp near its end
	}
	for _, c := range checks {
		got := count(c.lo, c.hi)
		if math.Abs(got-c.want) > 0.12*c.want {
			t.Errorf("rate in [%v,%v) s = %.1f/s, want about %.1f", c.lo, c.hi, got, c.want)
		}
	}
	if count(90, 100) < 2*count(0, 10) {
		t.Errorf("ramp did not raise the rate: %.1f then %.1f", count(0, 10), count(90, 100))
	}
	again := sc.Arrivals(sc.Seed)
	if len(again) != len(tasks) || again[len(again)/2] != tasks[len(tasks)/2] {
		t.Error("arrivals differ for the same seed")
	}
}
