package guard

import (
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
)

// tightGradient2 is a real Gradient2 with a limit of two tasks in flight
// that never moves (its window is longer than any test), so whether it
// sheds a task says exactly how many Decide and Observe calls reached it.
func tightGradient2() *control.Gradient2 {
	p := control.DefaultGradient2
	p.InitialLimit, p.WindowSamples = 2, 1<<30
	return control.NewGradient2(p)
}

var (
	sure     = policy.Decision{Priority: 3, Agreement: 1}
	disputed = policy.Decision{Priority: 3, Agreement: 0.4}
	outside  = policy.Decision{Priority: 3, Agreement: 1, OutOfRange: true}
	both     = policy.Decision{Priority: 3, Agreement: 0.2, OutOfRange: true}
)

func normalTask(at float64) *control.Task {
	return &control.Task{ArrivalMs: at, SLAMs: 1000, ExpectedMs: 5}
}

func TestGuardDecidesWhereTheNetworkIsUnsure(t *testing.T) {
	for _, c := range []struct {
		name      string
		cfg       Config
		d         policy.Decision
		want      Reason
		wantLevel int
	}{
		{"sure", DefaultConfig(), sure, Network, 3},
		{"members disagree", DefaultConfig(), disputed, Disagree, 2},
		{"out of range", DefaultConfig(), outside, OutOfRange, 2},
		{"both: out of range first", DefaultConfig(), both, OutOfRange, 2},
		{"out of range not guarded", Config{MinAgreement: 0.6}, outside, Network, 3},
		{"agreement not guarded", Config{OutOfRange: true}, disputed, Network, 3},
		{"agreement exactly the minimum", Config{MinAgreement: 0.4}, disputed, Network, 3},
	} {
		g, err := New(tightGradient2(), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		task := normalTask(100)
		level, why := g.Decide(task, &c.d)
		if why != c.want || level != c.wantLevel {
			t.Errorf("%s: level %d reason %s, want level %d reason %s", c.name, level, why, c.wantLevel, c.want)
		}
	}
}

// The controller decides every task, the network's too, and sees every
// finished task: its state is what it would be if it decided alone.
func TestGuardRunsTheControllerForEveryTask(t *testing.T) {
	g, err := New(tightGradient2(), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	a, b := normalTask(0), normalTask(1)
	if level, why := g.Decide(a, &sure); why != Network || level != 3 {
		t.Fatalf("first task: %d %s", level, why)
	}
	if level, why := g.Decide(b, &sure); why != Network || level != 3 {
		t.Fatalf("second task: %d %s", level, why)
	}
	// Two in flight already, both decided by the network: an unsure third
	// is over gradient2's limit of two and goes to the background.
	if level, why := g.Decide(normalTask(2), &disputed); why != Disagree || level != 0 {
		t.Fatalf("third task, over the limit: level %d reason %s, want the controller's 0", level, why)
	}
	for _, done := range []*control.Task{a, b} {
		g.Observe(done, done.ArrivalMs+1, done.ArrivalMs+6)
	}
	// One in flight now: the next unsure task is admitted.
	if level, why := g.Decide(normalTask(10), &disputed); why != Disagree || level != 2 {
		t.Fatalf("after two finished: level %d reason %s, want the controller's 2", level, why)
	}
	g.Reset()
	g.Decide(normalTask(20), &sure)
	if level, _ := g.Decide(normalTask(21), &disputed); level != 2 {
		t.Fatalf("after Reset the controller still counted old tasks: level %d", level)
	}
}

// Decide and Observe from many goroutines (run with -race): when every task
// has finished, the controller counts none in flight.
func TestGuardConcurrentUse(t *testing.T) {
	g, err := New(tightGradient2(), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				task := normalTask(float64(w*1000 + i))
				d := sure
				if i%3 == 0 {
					d = disputed
				}
				g.Decide(task, &d)
				g.Observe(task, task.ArrivalMs, task.ArrivalMs+1)
			}
		}()
	}
	wg.Wait()
	g.Decide(normalTask(1e6), &sure)
	if level, _ := g.Decide(normalTask(1e6), &disputed); level != 2 {
		t.Fatalf("the controller lost count under concurrent use: level %d with one task in flight", level)
	}
}

func TestGuardRefusesBadConfig(t *testing.T) {
	for name, f := range map[string]func() (*Guard, error){
		"nil controller":     func() (*Guard, error) { return New(nil, DefaultConfig()) },
		"agreement above 1":  func() (*Guard, error) { return New(tightGradient2(), Config{MinAgreement: 1.5}) },
		"negative agreement": func() (*Guard, error) { return New(tightGradient2(), Config{MinAgreement: -0.1}) },
		"NaN agreement":      func() (*Guard, error) { return New(tightGradient2(), Config{MinAgreement: float32(math.NaN())}) },
		"unknown controller": func() (*Guard, error) { return Named("pid", DefaultConfig()) },
		"unknown, or none":   func() (*Guard, error) { return NamedOrNone("pid", DefaultConfig()) },
	} {
		if _, err := f(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v, want ErrBadConfig", name, err)
		}
	}
	for _, name := range control.Names {
		g, err := Named(name, DefaultConfig())
		if err != nil || g.Controller() != name {
			t.Errorf("Named(%q): %v", name, err)
		}
		if g, err := NamedOrNone(name, DefaultConfig()); err != nil || g.Controller() != name {
			t.Errorf("NamedOrNone(%q): %v", name, err)
		}
	}
	if g, err := NamedOrNone(None, DefaultConfig()); g != nil || err != nil {
		t.Errorf("NamedOrNone(None) = %v, %v; want no guard and no error", g, err)
	}
}

func TestReasonNames(t *testing.T) {
	for r, want := range map[Reason]string{Network: "network", Disagree: "disagree", OutOfRange: "out_of_range", KeptUrgent: "kept_urgent", SlimMargin: "slim_margin", NumReasons: "reason(5)"} {
		if r.String() != want {
			t.Errorf("%d: %q, want %q", r, r.String(), want)
		}
	}
}

// The network, sure of itself, may not send to the background an urgent
// task the controller admits while it can still meet its SLA; a task above
// KeepUrgentMs, one that misses its SLA even at the top priority, or any
// task when the rule is off, keeps the network's 0. Preview answers the
// same.
func TestGuardKeepsUrgentWorkOutOfTheBackground(t *testing.T) {
	background := policy.Decision{Priority: 0, Agreement: 1}
	hopeless := policy.Decision{Priority: 0, Agreement: 1, MissesSLA: true}
	urgent := func(at float64) *control.Task { return &control.Task{ArrivalMs: at, SLAMs: 20, ExpectedMs: 2} }
	noKeep := DefaultConfig()
	noKeep.KeepUrgentMs = 0
	for _, c := range []struct {
		name      string
		cfg       Config
		d         *policy.Decision
		want      Reason
		wantLevel int
	}{
		{"kept", DefaultConfig(), &background, KeptUrgent, 4},
		{"off", noKeep, &background, Network, 0},
		{"not urgent enough", Config{MinAgreement: 0.6, KeepUrgentMs: 20}, &background, Network, 0},
		{"misses its SLA at the top", DefaultConfig(), &hopeless, Network, 0},
	} {
		g, err := New(tightGradient2(), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		level, why, ok := g.Preview(urgent(50), c.d)
		if !ok || why != c.want || level != c.wantLevel {
			t.Errorf("%s: preview level %d reason %s ok %v, want level %d reason %s", c.name, level, why, ok, c.wantLevel, c.want)
		}
		level, why = g.Decide(urgent(50), c.d)
		if why != c.want || level != c.wantLevel {
			t.Errorf("%s: level %d reason %s, want level %d reason %s", c.name, level, why, c.wantLevel, c.want)
		}
	}
	// A sure decision above 0 is the network's whatever the controller says.
	g, _ := New(tightGradient2(), DefaultConfig())
	if level, why := g.Decide(urgent(0), &policy.Decision{Priority: 1, Agreement: 1}); why != Network || level != 1 {
		t.Errorf("priority 1: level %d reason %s", level, why)
	}
}

// Where the members disagree, their mean's 0 for urgent work that misses
// its SLA even at the top stands against the controller's lift, which
// lifts it for being urgent; a disputed 0 for urgent work that can still
// meet its SLA, or for hopeless work that is not urgent, stays the
// controller's. Preview answers the same.
func TestGuardLetsDisputedHopelessUrgentWorkStayInTheBackground(t *testing.T) {
	disputed := func(misses bool) *policy.Decision {
		return &policy.Decision{Priority: 0, Agreement: 0.34, MissesSLA: misses}
	}
	urgent := &control.Task{ArrivalMs: 50, SLAMs: 20, ExpectedMs: 2}
	notUrgent := &control.Task{ArrivalMs: 50, SLAMs: 1000, ExpectedMs: 2}
	for _, c := range []struct {
		name      string
		t         *control.Task
		d         *policy.Decision
		want      Reason
		wantLevel int
	}{
		{"urgent, misses its SLA", urgent, disputed(true), Network, 0},
		{"urgent, can meet its SLA", urgent, disputed(false), Disagree, 4},
		{"not urgent, misses its SLA", notUrgent, disputed(true), Disagree, 2},
	} {
		g, err := New(tightGradient2(), DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		level, why, ok := g.Preview(c.t, c.d)
		if !ok || why != c.want || level != c.wantLevel {
			t.Errorf("%s: preview level %d reason %s ok %v, want level %d reason %s", c.name, level, why, ok, c.wantLevel, c.want)
		}
		if level, why = g.Decide(c.t, c.d); why != c.want || level != c.wantLevel {
			t.Errorf("%s: level %d reason %s, want level %d reason %s", c.name, level, why, c.wantLevel, c.want)
		}
	}
}

func TestGuardRefusesABadUrgentThreshold(t *testing.T) {
	for _, ms := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := New(tightGradient2(), Config{KeepUrgentMs: ms}); !errors.Is(err, ErrBadConfig) {
			t.Errorf("KeepUrgentMs %v: %v, want ErrBadConfig", ms, err)
		}
	}
}

// The network's sure priority stands only where its mean Q-value beats the
// controller's level by MinAdvantage; by less, the controller's level
// stands (SlimMargin), and Preview answers the same. Off (0), or where
// both agree, the network's stands.
func TestGuardYieldsWhereTheNetworkIsAheadBySoLittle(t *testing.T) {
	reserve := func() control.Controller { return control.NewReserve(control.DefaultReserve) }
	long := &control.Task{ArrivalMs: 10, SLAMs: 150, ExpectedMs: 12} // reserve-rule: background
	q := func(q4, q0 float32) *policy.Decision {
		d := &policy.Decision{Agreement: 1}
		d.Q = [policy.NumActions]float32{q0, -1, -1, -1, q4}
		d.Priority = policy.Argmax(&d.Q)
		return d
	}
	for _, c := range []struct {
		name      string
		margin    float32
		d         *policy.Decision
		want      Reason
		wantLevel int
	}{
		{"slim", 0.05, q(0.30, 0.27), SlimMargin, 0},
		{"clear", 0.05, q(0.30, 0.20), Network, 4},
		{"off", 0, q(0.30, 0.29), Network, 4},
		{"agrees", 0.05, q(0.20, 0.21), Network, 0},
	} {
		cfg := DefaultConfig()
		cfg.MinAdvantage = c.margin
		g, err := New(reserve(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		level, why, ok := g.Preview(long, c.d)
		if !ok || why != c.want || level != c.wantLevel {
			t.Errorf("%s: preview level %d reason %s ok %v, want level %d reason %s", c.name, level, why, ok, c.wantLevel, c.want)
		}
		level, why = g.Decide(long, c.d)
		if why != c.want || level != c.wantLevel {
			t.Errorf("%s: level %d reason %s, want level %d reason %s", c.name, level, why, c.wantLevel, c.want)
		}
	}
}

func TestGuardRefusesABadMinAdvantage(t *testing.T) {
	for _, m := range []float32{-0.1, float32(math.NaN()), float32(math.Inf(1))} {
		if _, err := New(tightGradient2(), Config{MinAdvantage: m}); !errors.Is(err, ErrBadConfig) {
			t.Errorf("MinAdvantage %v: %v, want ErrBadConfig", m, err)
		}
	}
}
