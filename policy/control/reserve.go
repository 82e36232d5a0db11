package control

// Reserve is the static rule that the adaptive controllers must beat, and
// a guard in its own right: a task whose SLA is under UrgentMs is urgent
// (priority 4), every other task is background (priority 0), deadline
// order within each. Background work never takes the last free workers
// the executor reserves (train.BackgroundReserve), so long work cannot
// hold every worker when an urgent task arrives: under non-preemptive
// service that reserve, not the order, is what keeps urgent tasks in
// their SLA. It measures nothing, so Observe and Reset do nothing.
type Reserve struct{ Tiers }

// DefaultReserve is the rule as the project's baseline runs it (50 ms:
// the threshold the baseline was written with, docs/training.md).
var DefaultReserve = Tiers{UrgentMs: 50}

// NewReserve returns the rule with threshold t.
func NewReserve(t Tiers) *Reserve { return &Reserve{t} }

func (*Reserve) Name() string { return "reserve-rule" }

func (r *Reserve) Decide(t *Task) (int, float64) {
	if r.Urgent(t) {
		return 4, t.DeadlineMs()
	}
	return 0, t.DeadlineMs()
}

func (*Reserve) Observe(*Task, float64, float64) {}
func (*Reserve) Reset()                          {}
