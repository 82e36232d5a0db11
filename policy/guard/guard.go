// Package guard is the policy network's guard: where the network is unsure
// of a decision (its ensemble's members disagree, or the task's state lies
// outside what training covered), the task is decided by an adaptive
// controller (policy/control) instead. One implementation serves the agent
// and the simulator's evaluation, so the policy `triage eval` scores is the
// one the agent serves.
package guard

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
)

// Reason says who decided a task and why.
type Reason uint8

const (
	// Network: the network was sure, its priority stands.
	Network Reason = iota
	// Disagree: fewer than the minimum share of the ensemble's members
	// chose the mean's priority.
	Disagree
	// OutOfRange: the state lies outside the feature ranges of training.
	// When a decision is both out of range and disputed, this is the
	// reason: the members' agreement means little where none was trained.
	OutOfRange
	// KeptUrgent: the network, sure of itself, put in the background
	// (priority 0) an urgent task (Config.KeepUrgentMs) the controller
	// admits; the controller's level stands.
	KeptUrgent
	// SlimMargin: the network, sure of itself, preferred its priority to
	// the controller's by less than Config.MinAdvantage of its own mean
	// Q-value; the controller's level stands.
	SlimMargin
	// NumReasons counts the reasons, for arrays indexed by Reason.
	NumReasons
)

var reasonNames = [NumReasons]string{Network: "network", Disagree: "disagree", OutOfRange: "out_of_range", KeptUrgent: "kept_urgent", SlimMargin: "slim_margin"}

// String is the reason as metrics label it.
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// DefaultMinAgreement is the share of members that must agree with the
// mean's priority for the network's decision to stand (with three
// members, two), and DefaultController the controller that decides where
// they do not, or where a state lies outside training. Both were chosen on
// 60 generated scenarios (seeds 200 and 300) that neither trained the
// model nor tuned the controllers (docs/policy-history.md, "Choosing the
// guard").
// The agent and `triage eval` share them.
const (
	DefaultMinAgreement = 0.6
	DefaultController   = "gradient2"
)

// Config is what makes a decision unsure.
type Config struct {
	// MinAgreement: a decision whose Agreement is below it is the
	// controller's. 0 never overrides on agreement (a single network's
	// agreement is always 1).
	MinAgreement float32
	// OutOfRange: a decision whose state lies outside the model's feature
	// ranges is the controller's.
	OutOfRange bool
	// KeepUrgentMs: the network may not send to the background (priority
	// 0) a task whose SLA is under KeepUrgentMs while the controller admits
	// it (any level above 0); the controller's level stands. Between those
	// levels the simulator often cannot tell them apart for short work (on
	// a short queue a background task starts at once too), so the
	// network's choice there can rest on little, and on a contended node
	// its kernel features once tipped it to the background for a 20 ms task
	// (cmd/triage.TestDecideKeepsUrgentWorkOutOfTheBackgroundOnAContendedNode).
	// Only while the task can still meet its SLA: where it cannot even at
	// the top priority (policy.Decision.MissesSLA), the network's level
	// stands, since holding a worker for it then takes one from the tasks
	// that still can (in a deep overload the guard's controller admits
	// every urgent task, and kept every one at the top). A controller that
	// sheds the task itself still may. 0: off.
	KeepUrgentMs float64
	// MinAdvantage: the network's sure decision stands only where its mean
	// Q-value beats that of the controller's level by at least this much
	// (in reward units, a task's reward lying in [-1, 1]); below it the
	// controller's level stands. The network departs from the controller
	// only where it has learnt a reason to. 0: off.
	MinAdvantage float32
}

// DefaultKeepUrgentMs is reserve-rule's threshold of urgent work
// (control.DefaultReserve): the tasks no rule of the project ever sends to
// the background.
const DefaultKeepUrgentMs = 50

// DefaultMinAdvantage is the agent's and `triage eval`'s MinAdvantage
// (docs/policy-history.md, "The network's margin over its guard").
const DefaultMinAdvantage = 0

// DefaultConfig is the agent's default: DefaultMinAgreement, out-of-range
// states guarded, urgent work under DefaultKeepUrgentMs kept out of the
// background, DefaultMinAdvantage.
func DefaultConfig() Config {
	return Config{MinAgreement: DefaultMinAgreement, OutOfRange: true, KeepUrgentMs: DefaultKeepUrgentMs, MinAdvantage: DefaultMinAdvantage}
}

// keepsUrgent says whether the network's sure decision d on t yields to
// the controller's level for it.
func (g *Guard) keepsUrgent(t *control.Task, d *policy.Decision, controllerLevel int) bool {
	return controllerLevel > 0 && g.urgentInBackground(t, d)
}

// urgentInBackground says whether d sends to the background urgent work t
// that can still meet its SLA: what KeepUrgentMs forbids, if the
// controller admits t.
func (g *Guard) urgentInBackground(t *control.Task, d *policy.Decision) bool {
	return d.Priority == 0 && g.urgent(t) && !d.MissesSLA
}

// overrules says whether the controller's level stands over the
// network's sure decision d on t, and why: KeptUrgent, SlimMargin, or
// Network where the network's stands.
func (g *Guard) overrules(t *control.Task, d *policy.Decision, controllerLevel int) Reason {
	switch {
	case g.keepsUrgent(t, d, controllerLevel):
		return KeptUrgent
	case g.slim(d, controllerLevel):
		return SlimMargin
	}
	return Network
}

// slim says whether the network's sure decision d beats the controller's
// level by less than MinAdvantage of mean Q-value.
func (g *Guard) slim(d *policy.Decision, controllerLevel int) bool {
	if g.cfg.MinAdvantage <= 0 || d.Priority == controllerLevel || controllerLevel < 0 || controllerLevel >= policy.NumActions {
		return false
	}
	return d.Q[d.Priority]-d.Q[controllerLevel] < g.cfg.MinAdvantage
}

// urgent says whether t is urgent work that KeepUrgentMs protects.
func (g *Guard) urgent(t *control.Task) bool { return t.SLAMs < g.cfg.KeepUrgentMs }

// ErrBadConfig reports a guard that cannot be built.
var ErrBadConfig = errors.New("guard: bad config")

// Guard holds the best controller and decides with it where the network is
// unsure. It always runs the controller, for every task, and forwards every
// finished task to it, so the controller's own state (gradient2's count in
// flight, CoDel's interval) is as true as if it decided alone. Safe for
// concurrent use: the controller, which is not, runs under a mutex.
type Guard struct {
	cfg Config
	mu  sync.Mutex
	c   control.Controller
}

// New guards with c under cfg.
func New(c control.Controller, cfg Config) (*Guard, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: no controller", ErrBadConfig)
	}
	if !(cfg.MinAgreement >= 0 && cfg.MinAgreement <= 1) {
		return nil, fmt.Errorf("%w: minimum agreement %v, want a share in [0, 1]", ErrBadConfig, cfg.MinAgreement)
	}
	if !(cfg.MinAdvantage >= 0) || math.IsInf(float64(cfg.MinAdvantage), 0) {
		return nil, fmt.Errorf("%w: minimum advantage %v, want 0 (off) or a finite Q-value difference", ErrBadConfig, cfg.MinAdvantage)
	}
	if !(cfg.KeepUrgentMs >= 0) || math.IsInf(cfg.KeepUrgentMs, 0) {
		return nil, fmt.Errorf("%w: urgent work under %v ms, want 0 (off) or a finite SLA", ErrBadConfig, cfg.KeepUrgentMs)
	}
	return &Guard{cfg: cfg, c: c}, nil
}

// None is the name that asks for no guard: every decision the network's.
const None = "none"

// NamedOrNone is Named, or nil (no guard) for None: what the agent's
// --guard and `triage eval --guard` accept.
func NamedOrNone(name string, cfg Config) (*Guard, error) {
	if name == None {
		return nil, nil
	}
	return Named(name, cfg)
}

// Named guards with the controller called name (control.GuardNames) under its
// default parameters.
func Named(name string, cfg Config) (*Guard, error) {
	c, err := control.New(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return New(c, cfg)
}

// Controller names the guard's controller.
func (g *Guard) Controller() string { return g.c.Name() }

// Config returns what makes a decision unsure.
func (g *Guard) Config() Config { return g.cfg }

// Unsure says whether d is the network's to make (Network) or why not.
func (g *Guard) Unsure(d *policy.Decision) Reason {
	switch {
	case g.cfg.OutOfRange && d.OutOfRange:
		return OutOfRange
	case d.Agreement < g.cfg.MinAgreement:
		return Disagree
	}
	return Network
}

// unsureOf is Unsure for the network's decision d on task t: where the
// members disagree and their mean sends to the background urgent work
// (KeepUrgentMs) that cannot meet its SLA even at the top priority
// (policy.Decision.MissesSLA), the mean's 0 stands (Network).
//
// Why: the guard's controllers lift urgent work for being urgent
// (control.Tiers admits it at the top whatever their limit says), so their
// lift of such a task says nothing of the load, and the task misses its
// SLA wherever it goes while it holds a worker above the tasks that still
// can meet theirs. On `gen-400-020` (a deep overload) the disputed lifts
// were 8,623 of 58,996 decisions and cost 16 points (docs/policy.md,
// "Urgent work stays out of the background"). A disputed 0 for work that
// is not urgent, or that can still meet its SLA, stays the controller's.
func (g *Guard) unsureOf(t *control.Task, d *policy.Decision) Reason {
	why := g.Unsure(d)
	if why == Disagree && d.Priority == 0 && d.MissesSLA && g.urgent(t) {
		return Network
	}
	return why
}

// Decide is the level of task t, given the network's decision d: the
// network's priority when it is sure (unless KeepUrgent or MinAdvantage
// hold it back), the controller's level otherwise, and the reason. The
// order within a level is the executor's (the wire carries a priority
// only), so no key is returned.
func (g *Guard) Decide(t *control.Task, d *policy.Decision) (level int, why Reason) {
	g.mu.Lock()
	level, _ = g.c.Decide(t)
	g.mu.Unlock()
	if why = g.unsureOf(t, d); why == Network {
		if why = g.overrules(t, d, level); why != Network {
			return level, why
		}
		return d.Priority, Network
	}
	return level, why
}

// Observe tells the controller of a finished task: it started at startMs
// and finished at finishMs, on the clock of t.ArrivalMs.
func (g *Guard) Observe(t *control.Task, startMs, finishMs float64) {
	g.mu.Lock()
	g.c.Observe(t, startMs, finishMs)
	g.mu.Unlock()
}

// Reset makes the controller forget every measurement (a new run).
func (g *Guard) Reset() {
	g.mu.Lock()
	g.c.Reset()
	g.mu.Unlock()
}
