package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/wire"
)

// rawStream is one native stream after Hello, driven by hand to send what
// the client library never would.
type rawStream struct {
	conn *quic.Conn
	fw   *wire.FrameWriter
	fr   *wire.FrameReader
}

func dialRawStream(t *testing.T, ta *testAgent) *rawStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pin := client.Config{PinSHA256: ta.Fingerprint()}
	conn, err := quic.DialAddr(ctx, ta.QUICAddr().String(), pin.TLSConfig("localhost", wire.ALPNNative), &quic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseWithError(0, "") })
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rs := &rawStream{conn: conn}
	rs.fw, _ = wire.NewFrameWriter(str)
	rs.fr, _ = wire.NewFrameReader(str, 0)
	if env := rs.call(t, &wire.Envelope{Body: &wire.Envelope_Hello{Hello: &wire.Hello{Version: wire.ProtocolVersion}}}); env.GetHelloOk() == nil {
		t.Fatalf("hello answered %v", env)
	}
	return rs
}

func (rs *rawStream) call(t *testing.T, env *wire.Envelope) *wire.Envelope {
	t.Helper()
	if err := rs.fw.Write(env); err != nil {
		t.Fatal(err)
	}
	var got wire.Envelope
	if err := rs.fr.Read(&got); err != nil {
		t.Fatal(err)
	}
	return &got
}

func localReport(id uint64, ds ...*wire.LocalDecision) *wire.Envelope {
	return &wire.Envelope{Body: &wire.Envelope_LocalReport{LocalReport: &wire.LocalReport{ReqId: id, Decisions: ds}}}
}

// A report the endpoint's limits refuse gets an Error with its req_id and
// the stream goes on; a report of a table the agent never published (or no
// longer keeps), or of a cell out of that table, is taken with the state
// built at the report: the task was served, the queue must count it.
func TestLocalReportBadInput(t *testing.T) {
	ta := localAgent(t, Config{MaxPending: 64})
	rs := dialRawStream(t, ta)
	task := func(id string) *wire.Task { return &wire.Task{TaskId: id, Class: "scoring", SlaMs: 200, CostMs: 15} }
	many := make([]*wire.LocalDecision, 1025)
	for i := range many {
		many[i] = &wire.LocalDecision{Task: task("x"), Priority: 1}
	}
	for _, c := range []struct {
		name string
		ds   []*wire.LocalDecision
		want wire.Code
	}{
		{"priority 5", []*wire.LocalDecision{{Task: task("a"), Priority: 5}}, wire.CodeInvalidArgument},
		{"no task", []*wire.LocalDecision{{Priority: 1}}, wire.CodeInvalidArgument},
		{"long task id", []*wire.LocalDecision{{Task: task(strings.Repeat("i", wire.MaxTaskIDBytes+1)), Priority: 1}}, wire.CodeInvalidArgument},
		{"batch over the limit", many, wire.CodeBatchTooLarge},
	} {
		env := rs.call(t, localReport(7, c.ds...))
		if e := env.GetError(); e == nil || wire.Code(e.GetCode()) != c.want || e.GetReqId() != 7 {
			t.Errorf("%s: answered %v, want error %s for req 7", c.name, env, c.want)
		}
	}
	if n := ta.tracker.len(); n != 0 {
		t.Fatalf("refused reports left %d tasks tracked", n)
	}
	env := rs.call(t, localReport(8,
		&wire.LocalDecision{Task: task("unknown-epoch"), Priority: 3, TableEpoch: 12345, Cell: 0, AgeUs: 1 << 31},
		&wire.LocalDecision{Task: task("far-cell"), Priority: 0, TableEpoch: 0, Cell: 1 << 30}))
	if acc := env.GetLocalAccepted(); acc == nil || acc.GetAccepted() != 2 || acc.GetReqId() != 8 {
		t.Fatalf("answered %v, want 2 accepted", env)
	}
	if n := ta.tracker.len(); n != 2 {
		t.Fatalf("agent tracks %d tasks, want 2", n)
	}
	if got := ta.metric(t, `triage_local_decisions_total{state="rebuilt"}`); got != 2 {
		t.Fatalf("rebuilt local decisions %v, want 2", got)
	}
	// The stream still serves calls.
	if env := rs.call(t, &wire.Envelope{Body: &wire.Envelope_DecideRequest{DecideRequest: &wire.DecideRequest{ReqId: 9, Tasks: []*wire.Task{task("after")}}}}); env.GetDecideResponse() == nil {
		t.Fatalf("decide after bad reports: %v", env)
	}
}
