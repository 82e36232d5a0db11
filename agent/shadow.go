package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// shadowEval runs a candidate model on the same states as the serving one,
// off the request path: the serving path hands a copy of each batch to a
// bounded queue (dropping, and counting, when it is full) and never waits.
// It aggregates how the candidate differs: agreement, the confusion of
// priorities, and the predicted return (the Q-value of the chosen level)
// of both models, so an operator can judge before POST /admin/promote.
type shadowEval struct {
	path string
	sess *policy.Session
	jobs chan shadowJob
	log  *slog.Logger

	mu    sync.Mutex
	stats ShadowStats
}

type shadowJob struct {
	ids     []string
	states  []policy.State
	primary []policy.Decision
}

// ShadowStats is what /admin/shadow answers.
type ShadowStats struct {
	Path    string `json:"path"`
	Model   string `json:"model"`
	Tasks   uint64 `json:"tasks"`
	Agree   uint64 `json:"agree"`
	Dropped uint64 `json:"dropped"`
	Errors  uint64 `json:"errors"`
	// AgreementRate is Agree/Tasks.
	AgreementRate float64 `json:"agreement_rate"`
	// MeanAbsQDiff is the mean over tasks and levels of |Q_candidate − Q_serving|.
	MeanAbsQDiff float64 `json:"mean_abs_q_diff"`
	// MeanServingValue and MeanCandidateValue are each model's predicted
	// return of its own choice; MeanCandidateAtServing the candidate's
	// estimate of the serving model's choice.
	MeanServingValue       float64 `json:"mean_serving_value"`
	MeanCandidateValue     float64 `json:"mean_candidate_value"`
	MeanCandidateAtServing float64 `json:"mean_candidate_at_serving"`
	// Confusion[s][c] counts tasks the serving model put at s and the candidate at c.
	Confusion [policy.NumActions][policy.NumActions]uint64 `json:"confusion"`
	// Recent holds the last disagreements, newest last.
	Recent []ShadowDisagreement `json:"recent"`

	sumAbsQ, sumServing, sumCand, sumCandAtServing float64
}

// ShadowDisagreement is one task the two models placed differently.
type ShadowDisagreement struct {
	TaskID    string                     `json:"task_id"`
	Serving   int                        `json:"serving"`
	Candidate int                        `json:"candidate"`
	ServingQ  [policy.NumActions]float32 `json:"serving_q"`
	CandQ     [policy.NumActions]float32 `json:"candidate_q"`
}

const maxRecentDisagreements = 32

func newShadow(path string, cfg policy.Config, log *slog.Logger) (*shadowEval, error) {
	sess, err := policy.LoadFile(path, cfg)
	if err != nil {
		return nil, fmt.Errorf("loading the shadow model: %w", err)
	}
	s := &shadowEval{path: path, sess: sess, jobs: make(chan shadowJob, 64), log: log}
	s.stats.Path, s.stats.Model = path, sess.Version()
	return s, nil
}

// submit queues a copy of one decided batch, or counts it dropped.
func (s *shadowEval) submit(tasks []*wire.Task, states []policy.State, primary []policy.Decision) {
	j := shadowJob{ids: make([]string, len(tasks)), states: append([]policy.State(nil), states...), primary: append([]policy.Decision(nil), primary...)}
	for i, t := range tasks {
		j.ids[i] = wire.TaskID(t)
	}
	select {
	case s.jobs <- j:
	default:
		s.mu.Lock()
		s.stats.Dropped += uint64(len(tasks))
		s.mu.Unlock()
	}
}

func (s *shadowEval) run(ctx context.Context) {
	var out []policy.Decision
	for {
		var j shadowJob
		select {
		case <-ctx.Done():
			return
		case j = <-s.jobs:
		}
		if cap(out) < len(j.states) {
			out = make([]policy.Decision, len(j.states))
		}
		out = out[:len(j.states)]
		err := s.sess.Decide(j.states, out)
		s.mu.Lock()
		if err != nil {
			s.stats.Errors += uint64(len(j.states))
			s.mu.Unlock()
			if !errors.Is(err, policy.ErrClosed) {
				s.log.Warn("shadow model failed to decide", "model", s.stats.Model, "err", err)
			}
			continue
		}
		s.account(j, out)
		s.mu.Unlock()
	}
}

func (s *shadowEval) account(j shadowJob, cand []policy.Decision) {
	st := &s.stats
	for i := range cand {
		p, c := j.primary[i].Priority, cand[i].Priority
		st.Tasks++
		st.Confusion[p][c]++
		for k := range cand[i].Q {
			st.sumAbsQ += math.Abs(float64(cand[i].Q[k] - j.primary[i].Q[k]))
		}
		st.sumServing += float64(j.primary[i].Q[p])
		st.sumCand += float64(cand[i].Q[c])
		st.sumCandAtServing += float64(cand[i].Q[p])
		if p == c {
			st.Agree++
			continue
		}
		if len(st.Recent) >= maxRecentDisagreements {
			st.Recent = append(st.Recent[:0], st.Recent[1:]...)
		}
		st.Recent = append(st.Recent, ShadowDisagreement{TaskID: j.ids[i], Serving: p, Candidate: c, ServingQ: j.primary[i].Q, CandQ: cand[i].Q})
	}
}

// Stats returns a copy of the aggregates with the means computed.
func (s *shadowEval) Stats() ShadowStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Recent = append([]ShadowDisagreement(nil), s.stats.Recent...)
	if st.Tasks > 0 {
		n := float64(st.Tasks)
		st.AgreementRate = float64(st.Agree) / n
		st.MeanAbsQDiff = st.sumAbsQ / (n * policy.NumActions)
		st.MeanServingValue = st.sumServing / n
		st.MeanCandidateValue = st.sumCand / n
		st.MeanCandidateAtServing = st.sumCandAtServing / n
	}
	return st
}

// modelBytes reads the candidate's file again for promotion (so that what
// is promoted is what the operator put there, checked by the reloader).
func (s *shadowEval) modelBytes() ([]byte, error) {
	b, err := os.ReadFile(s.path)
	if err != nil {
		return nil, fmt.Errorf("reading the shadow model: %w", err)
	}
	return b, nil
}

func (s *shadowEval) close() error { return s.sess.Close() }
