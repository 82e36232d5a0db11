package wire

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/triage-agent/triage/codec"
)

// queuedDatagrams hands out its datagrams in order, then fails as a closed
// connection does.
type queuedDatagrams [][]byte

func (q *queuedDatagrams) ReceiveDatagram(context.Context) ([]byte, error) {
	if len(*q) == 0 {
		return nil, errors.New("connection closed")
	}
	b := (*q)[0]
	*q = (*q)[1:]
	return b, nil
}

func TestReadDatagramsSplitsEachAndDropsTheMalformed(t *testing.T) {
	frame := bytes.Repeat([]byte{7}, codec.MinHeaderLen)
	other := bytes.Repeat([]byte{9}, codec.MinHeaderLen+3)
	q := queuedDatagrams{
		append([]byte{byte(ChanState)}, frame...),
		append([]byte{byte(ChanAck)}, frame[1:]...), // too short for a frame: dropped
		{},
		append([]byte{byte(ChanReply)}, other...),
	}
	var chans []Channel
	var frames [][]byte
	ReadDatagrams(context.Background(), &q, func(ch Channel, f []byte) {
		chans = append(chans, ch)
		frames = append(frames, f)
	})
	if len(q) != 0 {
		t.Fatalf("%d datagrams left unread: reading stopped at a malformed one", len(q))
	}
	if len(chans) != 2 || chans[0] != ChanState || chans[1] != ChanReply {
		t.Fatalf("handled channels %q, want %q", chans, []Channel{ChanState, ChanReply})
	}
	if !bytes.Equal(frames[0], frame) || !bytes.Equal(frames[1], other) {
		t.Fatalf("handled frames %v, want the datagrams without their channel byte", frames)
	}
}
