package train

import "github.com/triage-agent/triage/policy/control"

// The adaptive overload controllers (policy/control) as baselines in the
// simulator and on the real workers of bench e2e.

// Resetter is a policy with state of its own (a controller), which a
// simulation resets before each run so that runs do not leak into each
// other.
type Resetter interface{ Reset() }

// ControllerNames are the adaptive controllers, in report order.
var ControllerNames = control.Names

// Controller puts a control.Controller in the executor: it decides each
// task at arrival and observes each finished task.
type Controller struct{ C control.Controller }

func (p Controller) Name() string { return p.C.Name() }
func (p Controller) Reset()       { p.C.Reset() }

func (p Controller) Assign(t *Task, _ *NodeView) (int, float64, error) {
	level, key := p.C.Decide(controlTask(t))
	return level, key, nil
}

func (p Controller) Finished(t *Task, startMs, nowMs float64) {
	p.C.Observe(controlTask(t), startMs, nowMs)
}

func controlTask(t *Task) *control.Task {
	return &control.Task{ArrivalMs: t.ArrivalMs, SLAMs: t.SLAMs, ExpectedMs: t.ExpectedMs}
}

// Controllers returns a fresh instance of every controller with its
// default (searched) parameters.
func Controllers() []Policy {
	out := make([]Policy, 0, len(control.Names))
	for _, n := range control.Names {
		c, _ := control.New(n) // every name in control.Names is known
		out = append(out, Controller{c})
	}
	return out
}
