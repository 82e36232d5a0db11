package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/policy"
)

// ErrNoExperience is returned by FineTune when no record is usable.
var ErrNoExperience = errors.New("no usable experience records")

// FineTuneStats says what FineTune did.
type FineTuneStats struct {
	Records, Skipped, Steps int
	LossFirst, LossLast     float64 // mean Huber loss of the first and last 10% of steps
}

// FineTune continues training init on the agent's logged experience: each
// record is the transition (State, Action, Reward, Next), learned with the
// same double-DQN, prioritized-replay, target-network step as TrainDQN.
// The logged reward is the DESIGN.md reward (the agent cannot see the
// displacement price the simulator adds), so fine-tuning adapts the
// values to what the node really saw rather than re-learning the ordering.
// Records with an action outside 0..4 or a state outside [0, 1] are
// skipped and counted. init is not modified.
func FineTune(init *policy.MLP, recs []experience.Record, cfg DQNConfig, epochs int) (*policy.MLP, FineTuneStats, error) {
	var st FineTuneStats
	if err := init.Validate(); err != nil {
		return nil, st, fmt.Errorf("fine-tuning: initial model: %w", err)
	}
	cfg = cfg.withDefaults()
	if epochs <= 0 {
		epochs = 4
	}
	tr := &trainer{cfg: cfg, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x66696e65))}
	tr.online = cloneMLP(init)
	tr.target = cloneMLP(init)
	tr.avg = cloneMLP(init)
	tr.learn = newLearner(tr.online, cfg.LR)
	tr.buf = newReplay(max(1, min(len(recs), cfg.ReplaySize)), cfg.PERAlpha)
	tr.idx = make([]int, cfg.Batch)
	tr.w = make([]float32, cfg.Batch)
	for i := range recs {
		r := &recs[i]
		if int(r.Action) >= policy.NumActions || !validState(&r.State) || !validState(&r.Next) || !finite(float64(r.Reward)) {
			st.Skipped++
			continue
		}
		tr.buf.add(Transition{S: r.State, A: r.Action, R: r.Reward, Next: r.Next, Done: cfg.Gamma == 0})
		st.Records++
	}
	if st.Records == 0 {
		return nil, st, fmt.Errorf("fine-tuning: %w (%d skipped)", ErrNoExperience, st.Skipped)
	}
	total := max(1, epochs*st.Records/cfg.Batch)
	tenth := max(1, total/10)
	var first, last float64
	for s := 0; s < total; s++ {
		tr.beta = cfg.PERBetaStart + (1-cfg.PERBetaStart)*float64(s)/float64(total)
		tr.lossSum, tr.lossN = 0, 0
		tr.step()
		l := tr.lossSum / float64(tr.lossN)
		if s < tenth {
			first += l / float64(tenth)
		}
		if s >= total-tenth {
			last += l / float64(tenth)
		}
	}
	st.Steps, st.LossFirst, st.LossLast = total, first, last
	return tr.online, st, nil
}

func validState(s *policy.State) bool {
	for _, v := range s {
		if math.IsNaN(float64(v)) || v < 0 || v > 1 {
			return false
		}
	}
	return true
}
