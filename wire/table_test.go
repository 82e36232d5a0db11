package wire

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// validTable has two classes: one SLA point and two cost intervals; three
// queue rows.
func validTable() *DecisionTable {
	return &DecisionTable{
		Epoch: 7, QueueEdges: []float32{0, 2, 8},
		Classes: []*TableClass{
			{Name: "a", SlaLoMs: []float32{20}, SlaHiMs: []float32{math.Nextafter32(20, 100)},
				CostLoMs: []float32{1, 2}, CostHiMs: []float32{2, 4}, Levels: make([]byte, 1*3*3)},
			{Name: "b", SlaLoMs: []float32{0, 100}, SlaHiMs: []float32{1e-9, 200}, Levels: []byte{0, 1, 2, 3, 4, TableNoAnswer}},
		},
	}
}

func TestCheckDecisionTable(t *testing.T) {
	if err := CheckDecisionTable(validTable()); err != nil {
		t.Fatalf("valid table: %v", err)
	}
	nan := float32(math.NaN())
	for name, spoil := range map[string]func(*DecisionTable){
		"nil table":            nil,
		"no queue rows":        func(d *DecisionTable) { d.QueueEdges = nil },
		"first edge not 0":     func(d *DecisionTable) { d.QueueEdges[0] = 1 },
		"edges not ascending":  func(d *DecisionTable) { d.QueueEdges[2] = 2 },
		"NaN edge":             func(d *DecisionTable) { d.QueueEdges[1] = nan },
		"too many rows":        func(d *DecisionTable) { d.QueueEdges = make([]float32, MaxTableQueueRows+1) },
		"level 5":              func(d *DecisionTable) { d.Classes[0].Levels[3] = 5 },
		"level 254":            func(d *DecisionTable) { d.Classes[1].Levels[0] = 254 },
		"levels short":         func(d *DecisionTable) { d.Classes[0].Levels = d.Classes[0].Levels[:8] },
		"levels long":          func(d *DecisionTable) { d.Classes[1].Levels = append(d.Classes[1].Levels, 0) },
		"duplicate class":      func(d *DecisionTable) { d.Classes[1].Name = "a" },
		"long class name":      func(d *DecisionTable) { d.Classes[1].Name = strings.Repeat("x", MaxTableClassName+1) },
		"no SLA interval":      func(d *DecisionTable) { d.Classes[1].SlaLoMs, d.Classes[1].SlaHiMs = nil, nil },
		"SLA bounds unpaired":  func(d *DecisionTable) { d.Classes[1].SlaHiMs = d.Classes[1].SlaHiMs[:1] },
		"SLA empty interval":   func(d *DecisionTable) { d.Classes[1].SlaHiMs[1] = 100 },
		"SLA overlap":          func(d *DecisionTable) { d.Classes[1].SlaHiMs[0] = 150 },
		"SLA negative":         func(d *DecisionTable) { d.Classes[1].SlaLoMs[0] = -1 },
		"SLA infinite":         func(d *DecisionTable) { d.Classes[1].SlaHiMs[1] = float32(math.Inf(1)) },
		"SLA NaN":              func(d *DecisionTable) { d.Classes[0].SlaLoMs[0] = nan },
		"cost from 0":          func(d *DecisionTable) { d.Classes[0].CostLoMs[0] = 0 },
		"cost descending":      func(d *DecisionTable) { d.Classes[0].CostLoMs[1], d.Classes[0].CostHiMs[1] = 0.1, 0.5 },
		"too many classes":     func(d *DecisionTable) { d.Classes = make([]*TableClass, MaxTableClasses+1) },
		"too many cells":       func(d *DecisionTable) { manyCells(d) },
		"too many intervals":   func(d *DecisionTable) { manyIntervals(d) },
		"nil class is no SLAs": func(d *DecisionTable) { d.Classes[0] = nil },
	} {
		d := validTable()
		if spoil == nil {
			d = nil
		} else {
			spoil(d)
		}
		if err := CheckDecisionTable(d); !errors.Is(err, ErrBadTable) {
			t.Errorf("%s: %v, want ErrBadTable", name, err)
		}
	}
}

func manyIntervals(d *DecisionTable) {
	c := d.Classes[1]
	c.SlaLoMs, c.SlaHiMs = nil, nil
	for i := range MaxTableIntervals + 1 {
		c.SlaLoMs = append(c.SlaLoMs, float32(i+1))
		c.SlaHiMs = append(c.SlaHiMs, float32(i+2))
	}
	c.Levels = make([]byte, ClassCells(c, len(d.QueueEdges)))
}

func manyCells(d *DecisionTable) {
	d.QueueEdges = make([]float32, MaxTableQueueRows)
	for i := range d.QueueEdges {
		d.QueueEdges[i] = float32(i)
	}
	d.Classes = nil
	for k := range 20 {
		c := &TableClass{Name: string(rune('a' + k))}
		for i := range MaxTableIntervals {
			c.SlaLoMs = append(c.SlaLoMs, float32(i+1))
			c.SlaHiMs = append(c.SlaHiMs, float32(i+2))
		}
		c.Levels = make([]byte, ClassCells(c, len(d.QueueEdges)))
		d.Classes = append(d.Classes, c)
	}
}

func TestFindIntervalAndRow(t *testing.T) {
	lo, hi := []float32{0, 10, 20}, []float32{1, 15, 40}
	for x, want := range map[float32]int{0: 0, 0.5: 0, 1: -1, 9.9: -1, 10: 1, 14.99: 1, 15: -1, 20: 2, 39: 2, 40: -1, -1: -1, 1e30: -1} {
		if got := FindInterval(lo, hi, x); got != want {
			t.Errorf("FindInterval(%v) = %d, want %d", x, got, want)
		}
	}
	if got := FindInterval(lo, hi, float32(math.NaN())); got != -1 {
		t.Errorf("FindInterval(NaN) = %d", got)
	}
	if got := FindInterval(nil, nil, 1); got != -1 {
		t.Errorf("FindInterval on no intervals = %d", got)
	}
	edges := []float32{0, 2, 8}
	for n, want := range map[float32]int{0: 0, 1: 0, 2: 1, 7: 1, 8: 2, 1000: 2} {
		if got := FindRow(edges, n); got != want {
			t.Errorf("FindRow(%v) = %d, want %d", n, got, want)
		}
	}
	if got := TableCell(1, 2, 1, 2, 3); got != (1*3+2)*3+1 {
		t.Errorf("TableCell = %d", got)
	}
}
