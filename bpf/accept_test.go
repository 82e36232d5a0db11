package bpf

import (
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/faulttest"
)

func TestAcceptQueueFillsWithTinyBacklog(t *testing.T) {
	requireBPF(t)
	a := mustOpen(t, OpenAccept, AcceptOptions{})
	port := faulttest.ListenBacklog(t, 2)
	other := faulttest.ListenBacklog(t, 16)
	if err := a.WatchPort(port); err != nil {
		t.Fatal(err)
	}
	q, err := a.Read(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 1 || q[0].Port != port || q[0].Backlog != 0 || q[0].MaxBacklog != 2 {
		t.Fatalf("idle watched listener: got %+v, want one entry port %d backlog 0 max 2", q, port)
	}
	faulttest.DialBurst(t, port, 8, 3*time.Second)
	var got ListenQueue
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if q, err = a.Read(q); err != nil {
			t.Fatal(err)
		}
		if len(q) == 1 && q[0].Backlog >= q[0].MaxBacklog {
			got = q[0]
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("after burst: %+v", got)
	if got.MaxBacklog != 2 || got.Backlog < 2 {
		t.Fatalf("accept queue of port %d = %+v, want full (backlog >= max = 2)", port, q)
	}
	// The unwatched listener only shows with WatchAll.
	if err := a.WatchAll(true); err != nil {
		t.Fatal(err)
	}
	if q, err = a.Read(q); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range q {
		found = found || (l.Port == other && l.MaxBacklog == 16)
	}
	if !found {
		t.Errorf("WatchAll did not list port %d: %+v", other, q)
	}
}
