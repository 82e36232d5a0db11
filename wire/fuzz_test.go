package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/triage-agent/triage/codec"
)

// fuzzMaxFrame is small, so that the fuzzer reaches the size limits cheaply.
const fuzzMaxFrame = 4 << 10

// fuzzEnvelopes are the messages of the native protocol the seeds carry.
func fuzzEnvelopes() []*Envelope {
	return []*Envelope{
		{Body: &Envelope_Hello{Hello: &Hello{Version: ProtocolVersion, Token: "0123456789abcdef"}}},
		{Body: &Envelope_DecideRequest{DecideRequest: &DecideRequest{ReqId: 7, Tasks: []*Task{
			{Id: 1, Class: "scoring", SlaMs: 50, CostMs: 5, Tenant: "t"}, {TaskId: "job-9", Class: "batch", SlaMs: 2000}}}}},
		{Body: &Envelope_OutcomeReport{OutcomeReport: &OutcomeReport{ReqId: 8, Outcomes: []*Outcome{{Id: 1, LatencyMs: 3, ServiceMs: 2, SlaMet: true}}}}},
		{Body: &Envelope_Subscribe{Subscribe: &Subscribe{Mode: SubscribeMode_SUBSCRIBE_MODE_DATAGRAM}}},
		{Body: &Envelope_Ack{Ack: &Ack{Hash: 0xdeadbeef}}},
	}
}

// FuzzFrameReader: a native stream's bytes, whatever they are, read as a
// sequence of Envelopes ending in io.EOF or in an error the peer is told
// with a code; reading never panics or allocates past the limit, and every
// Envelope read writes and reads back the same.
func FuzzFrameReader(f *testing.F) {
	var stream bytes.Buffer
	fw, err := NewFrameWriter(&stream, CallOptions()...)
	if err != nil {
		f.Fatal(err)
	}
	for _, m := range fuzzEnvelopes() {
		if err := fw.Write(m); err != nil {
			f.Fatal(err)
		}
	}
	good := stream.Bytes()
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Add([]byte{0x05, 'h', 'e', 'l', 'l', 'o'})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := NewFrameReader(bytes.NewReader(data), fuzzMaxFrame, CallOptions()...)
		if err != nil {
			t.Fatal(err)
		}
		for range 64 {
			var m Envelope
			err := fr.Read(&m)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if CodeOf(err) == CodeOK {
					t.Fatalf("error %v maps to CodeOK", err)
				}
				return
			}
			roundTrip(t, &m)
		}
	})
}

// FuzzDatagram: a node-state datagram, whatever its bytes, decodes to an
// Envelope or to an error with a code, never a panic; a decoded one
// round-trips.
func FuzzDatagram(f *testing.F) {
	enc, err := NewDatagramCodec(codec.ModeAck)
	if err != nil {
		f.Fatal(err)
	}
	st := &Envelope{Body: &Envelope_NodeState{NodeState: &NodeState{Epoch: 3, Features: []float32{0.1, 0.2, 0.3}, Sources: []string{"ebpf"}, Node: "n"}}}
	d, _, err := enc.Encode(ChanState, st, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(d)
	f.Add(d[:len(d)-2])
	f.Add([]byte{byte(ChanState)})
	f.Fuzz(func(t *testing.T, datagram []byte) {
		_, frame, err := SplitDatagram(datagram)
		if err != nil {
			return
		}
		dec, err := NewDatagramCodec(codec.ModeAck, codec.WithMaxSize(fuzzMaxFrame))
		if err != nil {
			t.Fatal(err)
		}
		var m Envelope
		if _, err := dec.Decode(frame, &m); err != nil {
			if CodeOf(err) == CodeOK {
				t.Fatalf("error %v maps to CodeOK", err)
			}
			return
		}
		roundTrip(t, &m)
	})
}

// roundTrip writes m on a new stream and reads it back.
func roundTrip(t *testing.T, m *Envelope) {
	t.Helper()
	var buf bytes.Buffer
	fw, err := NewFrameWriter(&buf, append(CallOptions(), codec.WithMaxSize(DefaultMaxFrame))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(m); err != nil {
		t.Fatalf("writing a message read from the stream: %v", err)
	}
	fr, err := NewFrameReader(&buf, DefaultMaxFrame, CallOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	var again Envelope
	if err := fr.Read(&again); err != nil {
		t.Fatalf("reading back %v: %v", m, err)
	}
	if !proto.Equal(m, &again) {
		t.Fatalf("round trip changed the message:\n%v\n%v", m, &again)
	}
}

// FuzzDecideRequestJSON: the body of POST /v1/decide as the JSON API
// decodes it (strictly; the endpoint's own handler is fuzzed in
// agent/serve). Any bytes are a request whose tasks convert to the wire's,
// or an error; a request that converts marshals and converts again to the
// same tasks, with each id as it came (a string stays a string).
func FuzzDecideRequestJSON(f *testing.F) {
	f.Add([]byte(`{"tasks":[{"id":"task-1","class":"scoring","sla_ms":50,"cost_ms":5,"tenant":"shop"}]}`))
	f.Add([]byte(`{"tasks":[{"id":18446744073709551615,"class":"","sla_ms":0}]}`))
	f.Add([]byte(`{"tasks":[{"id":"","class":"x"}]}`))
	f.Add([]byte(`{"tasks":[{"id":-1}]}`))
	f.Add([]byte(`{"tasks":[{"id":1e3}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req DecideRequestJSON
		if json.Unmarshal(body, &req) != nil {
			return
		}
		tasks, err := TasksFromJSON(req.Tasks)
		if err != nil {
			return
		}
		for _, task := range tasks {
			if err := CheckTaskID(task); err != nil {
				t.Fatalf("TasksFromJSON accepted a task whose id CheckTaskID refuses: %v", err)
			}
		}
		b, err := json.Marshal(DecideRequestJSON{Tasks: TasksToJSON(tasks)})
		if err != nil {
			t.Fatalf("marshalling converted tasks: %v", err)
		}
		var again DecideRequestJSON
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatalf("reading %s back: %v", b, err)
		}
		tasks2, err := TasksFromJSON(again.Tasks)
		if err != nil {
			t.Fatalf("converting %s again: %v", b, err)
		}
		if len(tasks2) != len(tasks) {
			t.Fatalf("%d tasks became %d", len(tasks), len(tasks2))
		}
		for i := range tasks {
			if !proto.Equal(tasks[i], tasks2[i]) {
				t.Fatalf("task %d changed: %v -> %v", i, tasks[i], tasks2[i])
			}
		}
	})
}
