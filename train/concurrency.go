package train

import (
	"cmp"
	"slices"
)

// MostAtOnce is the most finished tasks of level that were in service at
// the same time (start to finish, a finish before a start at the same
// instant: a freed worker is reused). It is what the background reserve
// bounds: at level 0, never more than the workers less the reserve.
func MostAtOnce(out []Outcome, level int) int {
	return mostAtOnce(out, func(o *Outcome) bool { return o.Level == level })
}

// mostAtOnce is MostAtOnce over the finished tasks that counted says
// count, whatever their level.
func mostAtOnce(out []Outcome, counted func(*Outcome) bool) int {
	type edge struct {
		at    float64
		delta int
	}
	var edges []edge
	for i := range out {
		if o := &out[i]; o.Finished && counted(o) {
			edges = append(edges, edge{o.StartMs, 1}, edge{o.FinishMs, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}
