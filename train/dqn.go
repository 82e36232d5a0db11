package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/triage-agent/triage/policy"
)

// DQNConfig tunes the trainer. The zero value of every field means its
// default (see withDefaults), so DQNConfig{} is a complete configuration.
type DQNConfig struct {
	Seed     int64 // default 1
	Episodes int   // default 24
	Hidden   []int // default [64 64]
	// Gamma discounts the next decision's value, default 0. The transition
	// of a task is (its state, its priority, its training reward, the state
	// of the next task to arrive). With 0 each task is terminal: a
	// contextual bandit over priorities, where the displacement price in
	// TrainingReward carries the task's effect on the others. A positive
	// Gamma adds the bootstrapped value of the next decision (double DQN
	// with the target network); in our runs it added noise, not skill,
	// because the next task's state barely shows this task's priority.
	Gamma        float64
	LR           float64 // Adam learning rate, default 1e-3
	Batch        int     // default 64
	ReplaySize   int     // default 1<<17
	TrainEvery   int     // decisions between gradient steps, default 4
	Warmup       int     // transitions before the first step, default 2000
	TargetSync   int     // gradient steps between target-network syncs, default 500
	EpsStart     float64 // default 1
	EpsEnd       float64 // default 0.02
	EpsDecay     float64 // fraction of episodes over which ε decays linearly, default 0.6
	PERAlpha     float64 // default 0.6
	PERBetaStart float64 // annealed linearly to 1 over the run, default 0.4
	HuberDelta   float64 // default 1
	GradClip     float64 // global gradient-norm clip, default 10
	// HarmWeight scales the displacement price in the training reward (see
	// TrainingReward); default 1.
	HarmWeight float64
	// BlameWeight scales the blocking price (Outcome.Blame, see
	// assignBlame) in the training reward: default 6 (DefaultBlameWeight),
	// negative for none. Blame is known only when the episode ends, so with
	// it the episode's transitions are added to the replay then; it needs
	// Gamma 0, and with a positive Gamma the default is none.
	BlameWeight float64
	// MetBonus adds this much, times the class weight, to the training
	// reward of each task that met its SLA. DESIGN's reward weighs a
	// task's latency against its SLA above meeting it (0.6 against 0.3 in
	// the peak phase), which under contention pays for protecting the
	// tightest class; SLA attainment counts tasks. 0 (the default and the
	// shipped model's): the reward alone (docs/training-history.md,
	// "Paying for the count").
	MetBonus float64
	// MissingSources is, per training episode, the probability that each
	// kernel-signal source is absent (its features neutral, as on a node
	// without it; SimConfig.MissingSources): default 0.5
	// (DefaultMissingSources), negative for none. Why: a network trained
	// with every source present learns to lean on one. The first model
	// with the background tier read accept-queue fill as its load signal,
	// and on a node whose listener is not watched (fill 0, the neutral
	// value) it sent every task to the background.
	MissingSources float64
	// VaryNode is, per training episode, the probability that its node
	// reads its kernel features unlike the calibrated one
	// (SimConfig.VaryNode, nodeVariation): default 1 (DefaultVaryNode),
	// negative for none. The agent runs on other machines than the
	// calibrated one, and on that one too it read levels the calibration
	// never measured. (0.5, half the episodes on the calibrated node, on
	// which the simulator reports, trained a worse model on the
	// guard-selection scenarios: docs/training.md.)
	VaryNode float64
	// EpisodeSeconds caps each training episode's simulated duration
	// (default 60 s), so one episode of a long scenario stays short.
	EpisodeSeconds float64
	// EvalEvery episodes the greedy policy is scored on every training
	// scenario with a validation seed; the best-scoring network is kept.
	// Default 4.
	EvalEvery int
	// ValidationSeeds is how many arrival seeds per training scenario the
	// validation runs (default 1). One 60 s run's SLA attainment moves by
	// about as much as the best policies differ, so a checkpoint chosen on
	// one seed is partly chosen for its luck; more seeds choose it for skill.
	ValidationSeeds int
	// ValidationScenarios caps how many of the training scenarios the
	// validation runs on (spread evenly over the list), default 12: a
	// generated suite of a hundred would otherwise cost more to validate
	// than to train on.
	ValidationScenarios int
	// ValidationKernelWeight, when positive, adds to a checkpoint's
	// validation score this weight times its kernel share: on each
	// validation scenario with interference, its SLA attainment minus the
	// same network's with every kernel feature at its neutral value. Off
	// (0) by default. Why: the checkpoint with the best margin over the
	// baselines can be one that does better blind, and whether a model
	// reads the kernel was a draw between seeds (docs/training-history.md,
	// "Screening a candidate").
	ValidationKernelWeight float64
	// AverageDecay is the per-step decay of the exponential moving average
	// of the online weights (Polyak averaging), default 0.999. The average
	// is validated alongside the online network and kept when it scores
	// better: near a decision boundary the Q-values of two priorities differ
	// by less than one step's noise, and averaging removes that noise.
	AverageDecay float64
	// Ensemble trains this many networks with different seeds (Seed, Seed+1,
	// ...) and exports the mean of their Q-values as one MLP (see
	// EnsembleMLP). Default 1.
	Ensemble int
	// DemoEpisodes, DemoMargin and DemoWeight add learning from
	// demonstrations (DQfD, Hester et al. 2018). The demonstrator is the
	// static-class baseline of the training scenario (the trainer knows
	// each training scenario's classes; the network never sees them, only
	// the features). For the first DemoEpisodes episodes of each member the
	// behaviour policy is the demonstrator with ε-random actions instead of
	// the network. Every transition is labelled with the demonstrator's
	// action a_E, and when DemoMargin > 0 each gradient step adds, with
	// weight DemoWeight, the large-margin loss
	//   max_a [Q(s,a) + DemoMargin·[a ≠ a_E]] − Q(s,a_E)
	// to the double-DQN TD loss. The TD loss still decides: the network
	// departs from the demonstrator exactly where the learned value of
	// another priority beats the demonstrator's by more than the margin.
	// Why: a class ranking by SLA is already near the best priority rule
	// in this executor, and the plain DQN, which has to discover it from
	// the features alone, wavers around it; the margin anchors it there
	// and leaves it the improvements its values are sure of.
	// Default 0 (off).
	DemoEpisodes int
	DemoMargin   float64
	DemoWeight   float64 // default 1 when DemoMargin > 0
	// Teacher is the demonstrator: a baseline's name (train.Baselines), or
	// "best", the baseline with the highest SLA attainment on each training
	// scenario (measured before training on an arrival seed training never
	// uses), so the network is shown, per workload, the best hand-written
	// or adaptive policy there is for it. Default "static-class".
	Teacher string
	// DemoEpsilon is the random-action rate of the demonstration
	// episodes, default 0.2, so the alternatives get values too.
	DemoEpsilon float64
	// Progress, when set, is called after every episode.
	Progress func(EpisodeStats) `json:"-"`
}

func (c DQNConfig) withDefaults() DQNConfig {
	def := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	defI := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	defI(&c.Episodes, 24)
	if len(c.Hidden) == 0 {
		c.Hidden = []int{64, 64}
	}
	def(&c.LR, 1e-3)
	defI(&c.Batch, 64)
	defI(&c.ReplaySize, 1<<17)
	defI(&c.TrainEvery, 4)
	defI(&c.Warmup, 2000)
	defI(&c.TargetSync, 500)
	def(&c.EpsStart, 1)
	def(&c.EpsEnd, 0.02)
	def(&c.EpsDecay, 0.6)
	def(&c.PERAlpha, 0.6)
	def(&c.PERBetaStart, 0.4)
	def(&c.HuberDelta, 1)
	def(&c.GradClip, 10)
	def(&c.HarmWeight, 1)
	if c.MissingSources == 0 {
		c.MissingSources = DefaultMissingSources
	}
	if c.VaryNode == 0 {
		c.VaryNode = DefaultVaryNode
	}
	if c.BlameWeight == 0 {
		c.BlameWeight = DefaultBlameWeight
		if c.Gamma > 0 {
			c.BlameWeight = -1
		}
	}
	def(&c.EpisodeSeconds, 60)
	defI(&c.EvalEvery, 4)
	defI(&c.ValidationSeeds, 1)
	defI(&c.ValidationScenarios, 12)
	def(&c.AverageDecay, 0.999)
	defI(&c.Ensemble, 1)
	if c.DemoMargin > 0 {
		def(&c.DemoWeight, 1)
	}
	def(&c.DemoEpsilon, 0.2)
	if c.Teacher == "" {
		c.Teacher = "static-class"
	}
	return c
}

// DefaultBlameWeight is the blame weight of the default model: with 1 the
// network did not leave enough long work in the background tier; 4 and 6
// did, 6 the best in real execution (docs/history/training-v1.md has the runs).
const DefaultBlameWeight = 6

// DefaultMissingSources is the default model's per-episode probability of
// each kernel-signal source being absent.
const DefaultMissingSources = 0.5

// DefaultVaryNode is the default model's per-episode probability of a
// varied node.
const DefaultVaryNode = 1

// ErrNoScenarios is returned by TrainDQN without scenarios.
var ErrNoScenarios = errors.New("no training scenarios")

// EpisodeStats is one point of the learning curve.
type EpisodeStats struct {
	Member        int     `json:"member"` // ensemble member
	Episode       int     `json:"episode"`
	Scenario      string  `json:"scenario"`
	Epsilon       float64 `json:"epsilon"`
	MeanReward    float64 `json:"mean_reward"` // DESIGN.md reward, per task
	SLAAttainment float64 `json:"sla_attainment"`
	Loss          float64 `json:"loss"` // mean Huber loss of the episode's steps
	Steps         int     `json:"steps"`
	// ValScore is the greedy network's mean SLA-attainment margin over the
	// best baseline, on the training scenarios with validation seeds; NaN
	// when not evaluated.
	ValScore float64 `json:"-"`
}

// TrainResult is a trained network and how it got there.
type TrainResult struct {
	Net    *policy.MLP
	Curve  []EpisodeStats
	Config DQNConfig
	// BestEpisode and BestScore are each member's chosen checkpoint and its
	// validation score; Score is the exported network's.
	BestEpisode []int
	BestScore   []float64
	Score       float64
	// Ranges is the range of every feature over the states training saw
	// (policy.Metadata.Ranges).
	Ranges *policy.FeatureRanges
}

// TrainingReward is what the DQN learns from: the reward of DESIGN.md minus
// a displacement price, HarmWeight × Harm, where Harm is the reward the
// task's start took from the tasks it overtook (simulator.harmOf: their
// lost chance of meeting the SLA and their added latency penalty, with the
// phase's weights).
//
// Why: a task's own reward always prefers the highest priority, so a
// learner that only sees it converges to "everyone 4", which is plain EDF.
// The price charges each task for the delay it imposes, in the units of
// the reward, so a short urgent task pays almost nothing to go first and a
// long task pays for every deadline it pushes out: the selfish best answer
// per task becomes the one that is good for the node.
//
// BlameWeight × Blame adds the waits a task caused without overtaking
// anyone (assignBlame): taking the last free worker ahead of urgent
// arrivals. It is what makes the background tier worth choosing.
func TrainingReward(o *Outcome, harmWeight, blameWeight float64) float64 {
	return o.Reward - harmWeight*o.Harm - max(0, blameWeight)*o.Blame
}

// reward is o's training reward under the trainer's weights, with the
// MetBonus for a task that met its SLA.
func (tr *trainer) reward(o *Outcome) float32 {
	r := TrainingReward(o, tr.cfg.HarmWeight, tr.cfg.BlameWeight)
	if o.Met {
		r += tr.cfg.MetBonus * o.Weight
	}
	return float32(r)
}

type trainer struct {
	cfg    DQNConfig
	rng    *rand.Rand
	online *policy.MLP
	target *policy.MLP
	avg    *policy.MLP
	learn  *learner
	buf    *replay
	steps  int
	beta   float64
	eps    float64

	idx []int
	w   []float32
	// ranges is every state training saw, over all members: the model
	// carries it so the guard can tell an input outside training.
	ranges *policy.FeatureRanges
	// teacher is the demonstrator of the current episode's scenario,
	// teacherAct its action per task ID, demo whether the behaviour follows it.
	teacher    Policy
	teachers   *teachers
	teacherAct []uint8
	demo       bool
	scratch    []float32
	lossSum    float64
	lossN      int
}

// TrainDQN trains a policy on the scenarios, cycling through them one
// episode each; with Ensemble > 1 it trains that many members and exports
// their average. A fixed Seed gives a bit-identical network.
func TrainDQN(scenarios []*Scenario, cfg DQNConfig) (*TrainResult, error) {
	if len(scenarios) == 0 {
		return nil, ErrNoScenarios
	}
	cfg = cfg.withDefaults()
	if cfg.BlameWeight > 0 && cfg.Gamma > 0 {
		return nil, errors.New("training with a blame weight needs gamma 0: blame is known only when the episode ends")
	}
	val, err := newValidator(scenarios, cfg)
	if err != nil {
		return nil, err
	}
	tch, err := newTeachers(scenarios, cfg)
	if err != nil {
		return nil, err
	}
	res := &TrainResult{Config: cfg, Ranges: &policy.FeatureRanges{}}
	var members []*policy.MLP
	for m := 0; m < cfg.Ensemble; m++ {
		mc := cfg
		mc.Seed = cfg.Seed + int64(m)
		net, curve, ep, score, err := trainMember(scenarios, mc, val, tch, m, res.Ranges)
		if err != nil {
			return nil, err
		}
		members = append(members, net)
		res.Curve = append(res.Curve, curve...)
		res.BestEpisode = append(res.BestEpisode, ep)
		res.BestScore = append(res.BestScore, score)
	}
	res.Net = EnsembleMLP(members)
	if res.Score, err = val.score(res.Net); err != nil {
		return nil, err
	}
	return res, nil
}

func trainMember(scenarios []*Scenario, cfg DQNConfig, val *validator, tch *teachers, member int, ranges *policy.FeatureRanges) (*policy.MLP, []EpisodeStats, int, float64, error) {
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x64716e))
	tr := &trainer{cfg: cfg, rng: rng, teachers: tch, ranges: ranges}
	tr.online = newMLP(rng, cfg.Hidden)
	tr.target = cloneMLP(tr.online)
	tr.avg = cloneMLP(tr.online)
	tr.learn = newLearner(tr.online, cfg.LR)
	tr.buf = newReplay(cfg.ReplaySize, cfg.PERAlpha)
	tr.idx = make([]int, cfg.Batch)
	tr.w = make([]float32, cfg.Batch)

	var best *policy.MLP
	bestEp, bestScore := 0, math.Inf(-1)
	var curve []EpisodeStats
	for ep := 0; ep < cfg.Episodes; ep++ {
		sc := capDuration(scenarios[ep%len(scenarios)], cfg.EpisodeSeconds)
		frac := float64(ep) / math.Max(1, cfg.EpsDecay*float64(cfg.Episodes))
		tr.eps = cfg.EpsStart + (cfg.EpsEnd-cfg.EpsStart)*math.Min(1, frac)
		tr.beta = cfg.PERBetaStart + (1-cfg.PERBetaStart)*float64(ep)/math.Max(1, float64(cfg.Episodes-1))
		tr.demo = ep < cfg.DemoEpisodes
		if tr.demo {
			tr.eps = cfg.DemoEpsilon
		}
		st, err := tr.episode(sc, cfg.Seed*100_003+int64(ep)+1)
		if err != nil {
			return nil, nil, 0, 0, fmt.Errorf("training episode %d on %s: %w", ep, sc.Name, err)
		}
		st.Member, st.Episode = member, ep
		st.ValScore = math.NaN()
		if (ep+1)%cfg.EvalEvery == 0 || ep == cfg.Episodes-1 {
			for _, net := range []*policy.MLP{tr.online, tr.avg} {
				score, err := val.score(net)
				if err != nil {
					return nil, nil, 0, 0, err
				}
				st.ValScore = math.Max(score, nanToInf(st.ValScore))
				if score > bestScore {
					bestScore, bestEp = score, ep
					best = cloneMLP(net)
				}
			}
		}
		curve = append(curve, st)
		if cfg.Progress != nil {
			cfg.Progress(st)
		}
	}
	return best, curve, bestEp, bestScore, nil
}

// validator scores a greedy network on every training scenario with a seed
// that training never uses: the mean, over scenarios, of its SLA attainment
// minus the best baseline's on the same arrivals. Selecting on the margin
// over the baselines (not on raw attainment) keeps the network that beats
// them most reliably across loads, rather than the one that is best on the
// easiest scenario.
type validator struct {
	kernelWeight float64 // DQNConfig.ValidationKernelWeight
	scenarios    []*Scenario
	tasks        [][]Task
	seeds        []int64
	best         []float64
}

func newValidator(scenarios []*Scenario, cfg DQNConfig) (*validator, error) {
	v := &validator{kernelWeight: cfg.ValidationKernelWeight}
	step := max(1, len(scenarios)/cfg.ValidationScenarios)
	for i := 0; i < len(scenarios) && len(v.scenarios) < cfg.ValidationScenarios*cfg.ValidationSeeds; i += step {
		sc := scenarios[i]
		sc = capDuration(sc, cfg.EpisodeSeconds)
		for k := range cfg.ValidationSeeds {
			seed := -(cfg.Seed*7919 + int64(i) + 1 + int64(k)*1_000_003)
			tasks := sc.Arrivals(seed)
			best := 0.0
			for _, p := range Baselines(sc) {
				out, err := RunTasks(sc, tasks, p, SimConfig{Seed: seed})
				if err != nil {
					return nil, fmt.Errorf("validating baselines on %s: %w", sc.Name, err)
				}
				best = math.Max(best, Summarise(sc, out).SLAAttainment)
			}
			v.scenarios = append(v.scenarios, sc)
			v.tasks = append(v.tasks, tasks)
			v.seeds = append(v.seeds, seed)
			v.best = append(v.best, best)
		}
	}
	return v, nil
}

func (v *validator) score(net *policy.MLP) (float64, error) {
	sum := 0.0
	for i, sc := range v.scenarios {
		out, err := RunTasks(sc, v.tasks[i], &MLPPolicy{Label: "dqn", Net: net}, SimConfig{Seed: v.seeds[i]})
		if err != nil {
			return 0, fmt.Errorf("validating on %s: %w", sc.Name, err)
		}
		sla := Summarise(sc, out).SLAAttainment
		sum += sla - v.best[i]
		if v.kernelWeight > 0 && len(sc.Interference) > 0 {
			blind, err := RunTasks(sc, v.tasks[i], &blindMLP{MLPPolicy{Label: "dqn-ablated", Net: net}}, SimConfig{Seed: v.seeds[i]})
			if err != nil {
				return 0, fmt.Errorf("validating blind on %s: %w", sc.Name, err)
			}
			sum += v.kernelWeight * (sla - Summarise(sc, blind).SLAAttainment)
		}
	}
	return sum / float64(len(v.scenarios)), nil
}

func capDuration(sc *Scenario, seconds float64) *Scenario {
	if seconds <= 0 || sc.DurationS <= seconds {
		return sc
	}
	c := *sc
	c.DurationS = seconds
	return &c
}

// explorer is the ε-greedy behaviour policy over the online network. It
// passes finished tasks on to a teacher that measures its node (a
// controller), so the teacher decides as it would running alone.
type explorer struct{ tr *trainer }

func (e explorer) Finished(t *Task, startMs, nowMs float64) {
	if o, ok := e.tr.teacher.(Observer); ok {
		o.Finished(t, startMs, nowMs)
	}
}

func (e explorer) Name() string { return "dqn-explore" }
func (e explorer) Assign(t *Task, v *NodeView) (int, float64, error) {
	tr := e.tr
	if tr.teacher != nil {
		ta, _, err := tr.teacher.Assign(t, v)
		if err != nil {
			return 0, 0, err
		}
		for len(tr.teacherAct) <= t.ID {
			tr.teacherAct = append(tr.teacherAct, 0)
		}
		tr.teacherAct[t.ID] = uint8(ta) + 1
		if tr.demo && tr.rng.Float64() >= tr.eps {
			return ta, trainerOrder.Key(t), nil
		}
	}
	if tr.rng.Float64() < tr.eps {
		return tr.rng.IntN(policy.NumActions), trainerOrder.Key(t), nil
	}
	var q [policy.NumActions]float32
	tr.online.Forward(&v.State, &q, tr.scratch)
	return policy.Argmax(&q), trainerOrder.Key(t), nil
}

func (tr *trainer) episode(sc *Scenario, seed int64) (EpisodeStats, error) {
	tr.lossSum, tr.lossN = 0, 0
	tr.teacher, tr.teacherAct = nil, tr.teacherAct[:0]
	if tr.cfg.DemoMargin > 0 || tr.cfg.DemoEpisodes > 0 {
		tr.teacher = tr.teachers.of(sc)
	}
	teach := func(id int) uint8 {
		if id < len(tr.teacherAct) {
			return tr.teacherAct[id]
		}
		return 0
	}
	var states []policy.State
	pending := map[int]Transition{} // finished before the next task arrived
	decisions := 0
	push := func(id int, t Transition) {
		if t.Done || id+1 < len(states) {
			if !t.Done {
				t.Next = states[id+1]
			}
			tr.buf.add(t)
			return
		}
		pending[id] = t
	}
	blame := tr.cfg.BlameWeight > 0
	cfg := SimConfig{
		Seed:       seed,
		TrackHarm:  true,
		TrackBlame: blame,
		// A negative setting is "none"; SimConfig only draws for > 0.
		MissingSources: tr.cfg.MissingSources,
		// A negative setting is "none"; SimConfig only draws for > 0.
		VaryNode: tr.cfg.VaryNode,
		OnDecide: func(o *Outcome) {
			states = append(states, o.State)
			tr.ranges.Observe(o.State)
			if t, ok := pending[o.ID-1]; ok {
				delete(pending, o.ID-1)
				t.Next = o.State
				tr.buf.add(t)
			}
			decisions++
			if decisions%tr.cfg.TrainEvery == 0 && tr.buf.n >= max(tr.cfg.Warmup, tr.cfg.Batch) {
				tr.step()
			}
		},
		OnFinish: func(o *Outcome) {
			if blame {
				return // added with its blame when the run ends
			}
			push(o.ID, Transition{S: o.State, A: uint8(o.Level), R: tr.reward(o), Done: tr.cfg.Gamma == 0, Teacher: teach(o.ID)})
		},
	}
	out, err := Run(sc, explorer{tr}, cfg)
	if err != nil {
		return EpisodeStats{}, err
	}
	// What never finished still taught something: the episode's end is
	// terminal for those tasks and for any whose successor never came.
	for i := range out {
		if !out[i].Finished || blame {
			tr.buf.add(Transition{S: out[i].State, A: uint8(out[i].Level), R: tr.reward(&out[i]), Done: true, Teacher: teach(i)})
		}
	}
	for id := range len(out) {
		if t, ok := pending[id]; ok {
			t.Done = true
			tr.buf.add(t)
		}
	}
	m := Summarise(sc, out)
	st := EpisodeStats{Scenario: sc.Name, Epsilon: tr.eps, MeanReward: m.MeanReward, SLAAttainment: m.SLAAttainment, Steps: tr.steps}
	if tr.lossN > 0 {
		st.Loss = tr.lossSum / float64(tr.lossN)
	}
	return st, nil
}

// step is one gradient step of double DQN on a prioritized batch:
// y = r + γ·Q_target(s', argmax_a Q_online(s', a)), Huber loss on y − Q(s, a)
// weighted by the importance weights.
func (tr *trainer) step() {
	cfg := &tr.cfg
	tr.buf.sample(tr.rng, tr.beta, tr.idx, tr.w)
	tr.learn.g.zero()
	var qn, qt [policy.NumActions]float32
	for k, j := range tr.idx {
		t := &tr.buf.data[j]
		y := float64(t.R)
		if !t.Done && cfg.Gamma > 0 {
			tr.online.Forward(&t.Next, &qn, tr.scratch)
			tr.target.Forward(&t.Next, &qt, tr.scratch)
			y += cfg.Gamma * float64(qt[policy.Argmax(&qn)])
		}
		q := tr.learn.forward(&t.S)
		td := y - float64(q[t.A])
		tr.buf.update(j, td)
		// dHuber/dq: −td inside the quadratic zone, −δ·sign(td) outside.
		g := -math.Max(-cfg.HuberDelta, math.Min(cfg.HuberDelta, td))
		tr.learn.backward(int(t.A), float32(g)*tr.w[k])
		if t.Teacher > 0 && cfg.DemoMargin > 0 {
			tr.demoLoss(q, int(t.Teacher)-1)
		}
		a := math.Abs(td)
		if a <= cfg.HuberDelta {
			tr.lossSum += 0.5 * a * a
		} else {
			tr.lossSum += cfg.HuberDelta * (a - 0.5*cfg.HuberDelta)
		}
		tr.lossN++
	}
	tr.learn.adam.step(tr.online, tr.learn.g, cfg.Batch, cfg.GradClip)
	tr.steps++
	averageInto(tr.avg, tr.online, cfg.AverageDecay)
	if tr.steps%cfg.TargetSync == 0 {
		copyMLP(tr.target, tr.online)
	}
}

// demoLoss adds the gradient of DQfD's large-margin loss for the
// demonstrator's action aE to the learner, for the activations of the last
// forward pass (q is its output): zero when Q(s,aE) already leads every
// other action by the margin, else it raises Q(s,aE) and lowers the
// action that violates the margin most.
func (tr *trainer) demoLoss(q []float32, aE int) {
	m := float32(tr.cfg.DemoMargin)
	best, bv := aE, q[aE]
	for a, v := range q {
		if a != aE && v+m > bv {
			best, bv = a, v+m
		}
	}
	if best == aE {
		return
	}
	wgt := float32(tr.cfg.DemoWeight)
	tr.learn.backward(best, wgt)
	tr.learn.backward(aE, -wgt)
}

func nanToInf(x float64) float64 {
	if math.IsNaN(x) {
		return math.Inf(-1)
	}
	return x
}

// averageInto moves avg towards net: avg = d·avg + (1−d)·net.
func averageInto(avg, net *policy.MLP, d float64) {
	df, nf := float32(d), float32(1-d)
	for i := range net.Layers {
		a, n := avg.Layers[i], net.Layers[i]
		for k := range n.W {
			a.W[k] = df*a.W[k] + nf*n.W[k]
		}
		for k := range n.B {
			a.B[k] = df*a.B[k] + nf*n.B[k]
		}
	}
}

// MarshalJSON writes ValScore only where it was measured (JSON has no NaN).
func (s EpisodeStats) MarshalJSON() ([]byte, error) {
	type plain EpisodeStats
	out := struct {
		plain
		ValScore *float64 `json:"val_score,omitempty"`
	}{plain: plain(s)}
	if !math.IsNaN(s.ValScore) {
		out.ValScore = &s.ValScore
	}
	return json.Marshal(out)
}
