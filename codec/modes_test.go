package codec

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestKeyframeInterval(t *testing.T) {
	snaps := counterSnapshots(9, 20, 50)
	for _, k := range []int{0, 1, 4, 7} {
		_, kinds := roundTrip(t, snaps, WithKeyframeInterval(k))
		for i, got := range kinds {
			want := KindDelta
			if i == 0 || (k > 0 && i%k == 0) {
				want = KindFull
			}
			if got != want {
				t.Errorf("interval %d: frame %d is %v, want %v", k, i, got, want)
			}
		}
	}
}

func TestForceFullMidStream(t *testing.T) {
	snaps := counterSnapshots(10, 6, 50)
	e, d := mustEncoder(t), mustDecoder(t)
	for i, p := range snaps {
		if i == 3 {
			e.ForceFull()
		}
		f := mustEncode(t, e, p)
		if want := i == 0 || i == 3; (kindOf(t, f) == KindFull) != want {
			t.Errorf("frame %d is %v", i, kindOf(t, f))
		}
		if out, err := d.DecodeAll(f, nil); err != nil || !bytes.Equal(out, p) {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
}

// lossyLink simulates a datagram path in both directions: frames and acks
// are dropped with probability loss, and acks arrive after a random delay.
type lossyLink struct {
	rng         *rand.Rand
	loss        float64
	pendingAcks []pendingAck
}

type pendingAck struct {
	hash uint64
	due  int
}

func (l *lossyLink) drop() bool { return l.rng.Float64() < l.loss }

// TestAckModeUnderLoss: with only acknowledged payloads as bases, every frame
// that arrives decodes exactly, at any loss rate, and deltas still flow.
func TestAckModeUnderLoss(t *testing.T) {
	snaps := counterSnapshots(11, 600, 80)
	for _, tc := range []struct {
		loss float64
		ring int
	}{{0, 8}, {0.3, 8}, {0.8, 32}} {
		loss := tc.loss
		l := &lossyLink{rng: rand.New(rand.NewPCG(12, uint64(loss*100))), loss: loss}
		// A frame's ack comes back with probability (1-loss)^2, and the
		// encoder can use it while it is among its last ring frames: at 80%
		// loss a ring of 8 finds an acked base only 1-0.96^8 = 28% of the
		// time, a ring of 32 73%.
		e, d := mustEncoder(t, WithMode(ModeAck), WithRing(tc.ring)), mustDecoder(t, WithRing(tc.ring))
		var deltas, delivered int
		for step, p := range snaps {
			// Acks that are due reach the encoder first.
			keep := l.pendingAcks[:0]
			for _, a := range l.pendingAcks {
				if a.due <= step {
					e.Ack(a.hash)
				} else {
					keep = append(keep, a)
				}
			}
			l.pendingAcks = keep

			f := mustEncode(t, e, p)
			if l.drop() {
				continue
			}
			delivered++
			out, err := d.DecodeAll(f, nil)
			if err != nil {
				t.Fatalf("loss %.0f%%: delivered frame %d (%v) failed: %v", 100*loss, step, kindOf(t, f), err)
			}
			if !bytes.Equal(out, p) {
				t.Fatalf("loss %.0f%%: frame %d decoded to other bytes", 100*loss, step)
			}
			if kindOf(t, f) == KindDelta {
				deltas++
			}
			if !l.drop() {
				l.pendingAcks = append(l.pendingAcks, pendingAck{hash: Hash(out), due: step + 1 + l.rng.IntN(3)})
			}
		}
		t.Logf("loss %.0f%%: %d of %d frames delivered, %d of them deltas", 100*loss, delivered, len(snaps), deltas)
		if delivered == 0 || float64(deltas) < 0.5*float64(delivered) {
			t.Errorf("loss %.0f%%: only %d of %d delivered frames were deltas", 100*loss, deltas, delivered)
		}
	}
}

// TestStreamModeLossIsDetected: stream mode on a lossy path is a misuse, but
// it must fail safely: a frame either decodes exactly or is refused with
// ErrUnknownBase, and ForceFull recovers.
func TestStreamModeLossIsDetected(t *testing.T) {
	snaps := counterSnapshots(13, 200, 40)
	rng := rand.New(rand.NewPCG(14, 14))
	e, d := mustEncoder(t), mustDecoder(t)
	var unknown, ok int
	for i, p := range snaps {
		f := mustEncode(t, e, p)
		if rng.Float64() < 0.3 {
			continue
		}
		out, err := d.DecodeAll(f, nil)
		switch {
		case errorsIs(err, ErrUnknownBase):
			unknown++
			e.ForceFull()
		case err != nil:
			t.Fatalf("frame %d: %v", i, err)
		case !bytes.Equal(out, p):
			t.Fatalf("frame %d decoded to other bytes", i)
		default:
			ok++
		}
	}
	if unknown == 0 || ok < len(snaps)/3 {
		t.Errorf("%d decoded, %d unknown-base: want both, and recovery", ok, unknown)
	}
}

// TestConcurrentAcks: a receiver goroutine acks while the sender encodes, as
// in datagram mode (run with -race).
func TestConcurrentAcks(t *testing.T) {
	snaps := counterSnapshots(15, 300, 40)
	e, d := mustEncoder(t, WithMode(ModeAck)), mustDecoder(t)
	acks := make(chan uint64, len(snaps))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for h := range acks {
			e.Ack(h)
		}
	}()
	deltas := 0
	for i, p := range snaps {
		f := mustEncode(t, e, p)
		out, err := d.DecodeAll(f, nil)
		if err != nil || !bytes.Equal(out, p) {
			t.Fatalf("frame %d: %v", i, err)
		}
		if kindOf(t, f) == KindDelta {
			deltas++
		}
		acks <- Hash(out)
	}
	close(acks)
	<-done
	// How many frames of the loop were deltas depends on when the ack
	// goroutine ran (on a loaded machine, possibly none), so the check is
	// after it: every ack has been applied, so the next frame must be a
	// delta that decodes.
	t.Logf("%d of %d frames were deltas while acks raced the encoder", deltas, len(snaps))
	next := append(bytes.Clone(snaps[len(snaps)-1]), 'x')
	f := mustEncode(t, e, next)
	if kindOf(t, f) != KindDelta {
		t.Error("no delta after every frame was acknowledged")
	}
	if out, err := d.DecodeAll(f, nil); err != nil || !bytes.Equal(out, next) {
		t.Fatalf("frame after the acks: %v", err)
	}
}
