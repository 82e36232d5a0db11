package main

import (
	"context"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// On a node whose CPUs six spinning processes contend, the agent reads a
// run queue of milliseconds from eBPF and tells its clients to hold half
// of their workers back from background work (policy.ContendedReserve):
// in its node state, in its decide answers and in the decision tables a
// client decides from locally. The same agent blind to the kernel
// (--ablate kernel) sends the calm reserve under the same load: no outcome
// is reported, so no slowdown is known (policy.Reserve), and the reserve
// comes from the kernel, nothing else.
func TestContendedNodeRaisesTheBackgroundReserve(t *testing.T) {
	defer contendedNode(t, "reserve-contended")()
	for _, c := range []struct {
		blind bool
		want  float64
	}{{false, policy.ContendedReserve}, {true, policy.CalmReserve}} {
		a, stop := startTestAgent(t, agent.Config{ExperienceDir: "-", StateInterval: 50 * time.Millisecond, AblateKernel: c.blind})
		cl, err := client.Dial(context.Background(), a.QUICAddr().String(), client.Config{PinSHA256: a.Fingerprint(), ServerName: "localhost", LocalDecisions: true})
		if err != nil {
			stop()
			t.Fatal(err)
		}
		var got struct{ state, answer, client float64 }
		deadline := time.Now().Add(10 * time.Second)
		for {
			st := a.State()
			resp, err := cl.DecideRemote(context.Background(), []*wire.Task{{Id: 1, Class: "api", SlaMs: 20, CostMs: 2}})
			if err != nil {
				t.Fatal(err)
			}
			share, ok := cl.BackgroundReserve()
			got.state, got.answer = float64(st.GetBackgroundReserve()), float64(resp.GetBackgroundReserve())
			if ok {
				got.client = share
			}
			if got.state == c.want && got.answer == c.want && got.client == c.want && cl.LocalStats().Tables > 0 {
				t.Logf("blind %v: reserve %v (node: CPU %.2f, run-queue p99 %.0f µs, sources %v)", c.blind, c.want, st.GetCpuUtil(), st.GetRunqP99Us(), st.GetSources())
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("blind %v, six spinners: reserve in the state %v, in a decide answer %v, at the client %v (tables %d); want %v (run-queue p99 %.0f µs)",
					c.blind, got.state, got.answer, got.client, cl.LocalStats().Tables, c.want, st.GetRunqP99Us())
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
		stop()
	}
}
