package train

import (
	"testing"

	"github.com/triage-agent/triage/policy"
)

// acceptSeen is a FIFO that records the largest accept-queue feature the
// tasks it decides are given.
type acceptSeen struct {
	FIFO
	most float32
	n    int
}

func (p *acceptSeen) Assign(t *Task, v *NodeView) (int, float64, error) {
	p.most = max(p.most, v.State[policy.FeatAcceptQueue])
	p.n++
	return p.FIFO.Assign(t, v)
}

// Under an overload the simulated node's listen queue holds the
// executor's backlog, and the policies read it filling; a service that
// accepts eagerly (SimConfig.EagerAccept) keeps it empty, and they read 0
// throughout, the feature's value on a node with nothing in the queue.
func TestAnEagerAcceptorsListenQueueReadsEmpty(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"backlog","seed":3,"duration_s":4,"workers":2,"node":{"cpus":2},
	 "arrival":{"process":"poisson","rate_per_s":400},
	 "classes":[{"name":"a","share":1,"sla_ms":100,"cost_ms":{"dist":"constant","value":10}}]}`)
	var backlog, eager acceptSeen
	if _, err := Run(sc, &backlog, SimConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(sc, &eager, SimConfig{EagerAccept: true}); err != nil {
		t.Fatal(err)
	}
	if backlog.most < 0.5 {
		t.Errorf("the default node at twice its capacity: accept-queue feature at most %.2f over %d tasks, want it filling (0.5 or more)", backlog.most, backlog.n)
	}
	if eager.n == 0 || eager.most != 0 {
		t.Errorf("an eager acceptor: accept-queue feature at most %.2f over %d tasks, want 0 throughout", eager.most, eager.n)
	}
}
