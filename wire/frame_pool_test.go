package wire

import (
	"bytes"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/triage-agent/triage/codec"
)

// Writers of a pool write, frame for frame, the bytes a writer with its
// own encoder and the same options writes, from any number of goroutines,
// and a reader reads them back.
func TestPooledFrameWriterWritesTheSameFrames(t *testing.T) {
	opts := append(CallOptions(), codec.WithMaxSize(DefaultMaxFrame))
	pool, err := NewEncoderPool(opts...)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []*Envelope{decideEnv(1), decideEnv(64), decideEnv(64), {Body: &Envelope_Ack{Ack: &Ack{Hash: 42}}}, decideEnv(3)}
	var want bytes.Buffer
	own, err := NewFrameWriter(&want, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := own.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	const writers = 8
	got := make([]bytes.Buffer, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fw := NewPooledFrameWriter(&got[w], pool)
			for _, m := range msgs {
				if err := fw.Write(m); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for w := range writers {
		if !bytes.Equal(got[w].Bytes(), want.Bytes()) {
			t.Fatalf("writer %d wrote %d bytes unlike the %d of an own encoder", w, got[w].Len(), want.Len())
		}
	}
	fr, err := NewFrameReader(&got[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	wantFrames(t, fr, msgs)
}

// A writer of a pool keeps no encoder: a thousand of them, each having
// written, hold less than one encoder of their own.
func TestPooledFrameWritersShareEncoders(t *testing.T) {
	pool, err := NewEncoderPool(CallOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	const n = 1000
	h0 := heap()
	owns := make([]*FrameWriter, 10)
	for i := range owns {
		if owns[i], err = NewFrameWriter(io.Discard, CallOptions()...); err != nil {
			t.Fatal(err)
		}
		if err := owns[i].Write(decideEnv(8)); err != nil {
			t.Fatal(err)
		}
	}
	ownBytes := (heap() - h0) / int64(len(owns))
	writers := make([]*FrameWriter, n)
	h0 = heap()
	for i := range writers {
		writers[i] = NewPooledFrameWriter(io.Discard, pool)
		if err := writers[i].Write(decideEnv(8)); err != nil {
			t.Fatal(err)
		}
	}
	per := (heap() - h0) / n
	runtime.KeepAlive(writers)
	runtime.KeepAlive(owns)
	if per*4 > ownBytes {
		t.Fatalf("a pooled writer holds %d bytes, an own encoder %d", per, ownBytes)
	}
	t.Logf("pooled writer %d bytes, writer with its own encoder %d", per, ownBytes)
}

func TestEncoderPoolRefusesBadOptions(t *testing.T) {
	if _, err := NewEncoderPool(codec.WithMaxSize(-1)); err == nil {
		t.Fatal("a negative frame limit was accepted")
	}
}

// The call streams store literals as they are (CallOptions): on decide
// calls and answers Huffman coding saved nothing, so their frames are no
// larger without it.
func TestCallFramesNoLargerWithoutLiteralEntropy(t *testing.T) {
	answer := &DecideResponse{ReqId: 3, Model: "interim", StateEpoch: 99}
	for i := 0; i < 64; i++ {
		answer.Decisions = append(answer.Decisions, &Decision{Id: uint64(100000 + i), Priority: uint32(i % 5), Q: []float32{0.1 * float32(i), -0.3, 0.77, 1.5, -2}})
	}
	for name, m := range map[string]*Envelope{"request": decideEnv(64), "answer": {Body: &Envelope_DecideResponse{DecideResponse: answer}}} {
		var with, without bytes.Buffer
		a, err := NewFrameWriter(&with, codec.WithLevel(1), codec.WithKeyframeInterval(1))
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewFrameWriter(&without, CallOptions()...)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Write(m); err != nil {
			t.Fatal(err)
		}
		if err := b.Write(m); err != nil {
			t.Fatal(err)
		}
		if without.Len() > with.Len() {
			t.Errorf("%s of 64: %d bytes with CallOptions, %d with literal entropy coding", name, without.Len(), with.Len())
		}
	}
}
