package wire

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/triage-agent/triage/codec"
)

// stateFeatures is the length of a triage.state.v3 vector
// (policy.NumFeatures; wire does not import policy), so the test's
// snapshots are the size the agent sends.
const stateFeatures = 21

func snapshot(epoch uint64) *Envelope {
	f := make([]float32, stateFeatures)
	for i := range f {
		f[i] = float32(i) / stateFeatures
	}
	f[6] = float32(epoch%10) / 10 // the run-queue p50 moves
	return &Envelope{Body: &Envelope_NodeState{NodeState: &NodeState{
		Epoch: epoch, UnixNano: int64(epoch) * 1e7, Features: f, RunqP50Us: 12, RunqP99Us: 400, QueueLen: 3, QueueCap: 4,
		Sources: []string{"agent", "descriptor", "descriptor", "outcomes", "outcomes", "none", "ebpf", "ebpf", "ebpf", "ebpf", "procfs", "ebpf",
			"outcomes", "outcomes", "descriptor", "outcomes", "outcomes", "agent", "agent", "agent", "agent"},
		Model: "bootstrap-0", Node: "node-a",
	}}}
}

// Ack mode: the sender deltas only against acknowledged snapshots, so the
// receiver decodes every datagram that arrives, whatever was lost before.
func TestDatagramAckModeSurvivesLoss(t *testing.T) {
	tx, err := NewDatagramCodec(codec.ModeAck, SnapshotOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	rx, _ := NewDatagramCodec(codec.ModeAck)
	var buf []byte
	deltas := 0
	var fullBytes, deltaBytes int
	for e := uint64(1); e <= 200; e++ {
		m := snapshot(e)
		buf, _, err = tx.Encode(ChanState, m, buf[:0])
		if err != nil {
			t.Fatal(err)
		}
		if len(buf) > MaxDatagram {
			t.Fatalf("snapshot datagram is %d bytes, limit %d", len(buf), MaxDatagram)
		}
		if e%3 != 0 { // two of three datagrams are lost
			continue
		}
		ch, frame, err := SplitDatagram(buf)
		if err != nil || ch != ChanState {
			t.Fatalf("split: %v %v", ch, err)
		}
		if codec.Kind(frame[0]) == codec.KindDelta {
			deltas++
			deltaBytes = len(buf)
		} else {
			fullBytes = len(buf)
		}
		var got Envelope
		hash, err := rx.Decode(frame, &got)
		if err != nil {
			t.Fatalf("epoch %d: %v", e, err)
		}
		if !proto.Equal(&got, m) {
			t.Fatalf("epoch %d decoded wrong", e)
		}
		if e%2 == 0 { // and half of the acks are lost too
			tx.Encoder().Ack(hash)
		}
	}
	if deltas == 0 {
		t.Error("no delta was ever sent")
	}
	t.Logf("snapshot datagram: %d bytes full, %d bytes as a delta", fullBytes, deltaBytes)
}

func TestSplitDatagramShort(t *testing.T) {
	if _, _, err := SplitDatagram([]byte{'S', 1, 2}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short datagram: %v", err)
	}
}
