package train

import (
	"math"
	"math/rand/v2"
)

// z99 is the standard normal's 99th percentile: a lognormal's p99 is
// median·exp(σ·z99), which is how the file's (median, p99) become σ.
const z99 = 2.3263478740408408

// Dist is a service-time distribution in milliseconds, as written in a
// scenario file. Which fields are allowed depends on Kind; Validate refuses
// a field that does not belong to the distribution so a typo cannot silently
// fall back to a default.
type Dist struct {
	Kind   string   `json:"dist"`
	Median *float64 `json:"median,omitempty"`
	P99    *float64 `json:"p99,omitempty"`
	Mean_  *float64 `json:"mean,omitempty"`
	Min    *float64 `json:"min,omitempty"`
	Alpha  *float64 `json:"alpha,omitempty"`
	Value  *float64 `json:"value,omitempty"`
}

func (d *Dist) validate() error {
	fields := map[string]*float64{"median": d.Median, "p99": d.P99, "mean": d.Mean_, "min": d.Min, "alpha": d.Alpha, "value": d.Value}
	var want []string
	switch d.Kind {
	case "":
		return bad("missing dist")
	case "lognormal":
		want = []string{"median", "p99"}
	case "exponential":
		want = []string{"mean"}
	case "pareto":
		want = []string{"min", "alpha"}
	case "constant":
		want = []string{"value"}
	default:
		return bad("unknown dist %q (lognormal, exponential, pareto, constant)", d.Kind)
	}
	allowed := map[string]bool{}
	for _, name := range want {
		allowed[name] = true
		v := fields[name]
		if v == nil {
			return bad("%s: missing %s", d.Kind, name)
		}
		if !finite(*v) || *v <= 0 {
			return bad("%s: %s must be a positive number, got %v", d.Kind, name, *v)
		}
	}
	for name, v := range fields {
		if v != nil && !allowed[name] {
			return bad("%s: field %s does not belong to this distribution", d.Kind, name)
		}
	}
	switch d.Kind {
	case "lognormal":
		if *d.P99 <= *d.Median {
			return bad("lognormal: p99 (%v) must be above median (%v)", *d.P99, *d.Median)
		}
	case "pareto":
		if *d.Alpha <= 1 {
			return bad("pareto: alpha must be > 1 (the mean is infinite otherwise), got %v", *d.Alpha)
		}
	}
	return nil
}

func (d *Dist) sigma() float64 { return math.Log(*d.P99/(*d.Median)) / z99 }

// Mean is the distribution's mean in milliseconds.
func (d *Dist) Mean() float64 {
	switch d.Kind {
	case "lognormal":
		s := d.sigma()
		return *d.Median * math.Exp(s*s/2)
	case "exponential":
		return *d.Mean_
	case "pareto":
		return *d.Alpha * *d.Min / (*d.Alpha - 1)
	case "constant":
		return *d.Value
	}
	return math.NaN()
}

// Quantile is the q-quantile in milliseconds (0 < q < 1).
func (d *Dist) Quantile(q float64) float64 {
	switch d.Kind {
	case "lognormal":
		return *d.Median * math.Exp(d.sigma()*math.Sqrt2*math.Erfinv(2*q-1))
	case "exponential":
		return -*d.Mean_ * math.Log(1-q)
	case "pareto":
		return *d.Min / math.Pow(1-q, 1 / *d.Alpha)
	case "constant":
		return *d.Value
	}
	return math.NaN()
}

// Sample draws one service time in milliseconds. Pareto draws are capped at
// the 1-1e-6 quantile so one draw cannot stall a whole run.
func (d *Dist) Sample(r *rand.Rand) float64 {
	switch d.Kind {
	case "lognormal":
		return *d.Median * math.Exp(d.sigma()*r.NormFloat64())
	case "exponential":
		return r.ExpFloat64() * *d.Mean_
	case "pareto":
		u := 1 - r.Float64() // (0, 1]
		return math.Min(*d.Min/math.Pow(u, 1 / *d.Alpha), d.Quantile(1-1e-6))
	case "constant":
		return *d.Value
	}
	return math.NaN()
}
