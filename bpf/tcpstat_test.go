package bpf

import (
	"net"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/internal/faulttest"
)

// TestTCPStatCountsStatesAndSynRetransmits opens and closes loopback
// connections (state changes) and dials a listener whose accept queue is
// full: the kernel drops those SYNs and the client retransmits after the
// initial 1 s RTO, which is a real tcp_retransmit_skb on loopback.
func TestTCPStatCountsStatesAndSynRetransmits(t *testing.T) {
	requireBPF(t)
	for _, tier := range allTiers {
		t.Run(tier.String(), func(t *testing.T) {
			s := mustOpen(t, OpenTCPStat, TCPStatOptions{Tier: tier})
			c0, err := s.Read()
			if err != nil {
				t.Fatal(err)
			}
			ln, err := proc.ListenClosingEach()
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			const conns = 10
			for i := 0; i < conns; i++ {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
			}
			c1, err := s.Read()
			if err != nil {
				t.Fatal(err)
			}
			if est := c1.Established - c0.Established; est < conns {
				t.Errorf("%d connections, %d moves to ESTABLISHED", conns, est)
			}
			if ch := c1.StateChanges - c0.StateChanges; ch < 3*conns {
				t.Errorf("%d connections, only %d state changes", conns, ch)
			}
			if tier != TierBTF {
				return // the retransmit path is the same on every tier; wait 1 s once
			}
			port := faulttest.ListenBacklog(t, 0)
			faulttest.DialBurst(t, port, 4, 1500*time.Millisecond)
			deadline := time.Now().Add(2500 * time.Millisecond)
			var c2 TCPCounters
			for time.Now().Before(deadline) {
				if c2, err = s.Read(); err != nil {
					t.Fatal(err)
				}
				if c2.Retransmits > c1.Retransmits {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("counters: %+v", c2)
			if c2.Retransmits == c1.Retransmits {
				t.Errorf("no SYN retransmit counted within 2.5 s of dialing a full accept queue")
			}
		})
	}
}
