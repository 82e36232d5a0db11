package serve_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/internal/lossyproxy"
	"github.com/triage-agent/triage/wire"
)

// Through a proxy dropping 30% and then 80% of the packets in each
// direction, a datagram-mode subscriber keeps receiving fresh node state
// (each delta is against a snapshot it acknowledged, so no loss makes a later
// datagram undecodable) and a decide call still completes. Staleness is the
// age of a snapshot when it arrives (the backend stamps one every 10 ms).
func TestDatagramSubscriberUnderLoss(t *testing.T) {
	for _, drop := range []float64{0.3, 0.8} {
		t.Run(fmt.Sprintf("drop %.0f%%", drop*100), func(t *testing.T) {
			b, _ := goBackend()
			ts := startServer(t, serve.Config{StateInterval: 10 * time.Millisecond}, b)
			px, err := lossyproxy.New(lossyproxy.Config{Server: ts.addr(), Seed: 42})
			if err != nil {
				t.Fatal(err)
			}
			defer px.Close()
			cfg := ts.clientConfig()
			cfg.IdleTimeout = time.Minute
			cfg.KeepAlive = time.Second
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, err := client.Dial(ctx, px.Addr().String(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ch, err := c.Subscribe(ctx, wire.SubscribeMode_SUBSCRIBE_MODE_DATAGRAM)
			if err != nil {
				t.Fatal(err)
			}
			waitEpoch(t, ctx, ch, 1, "before loss")
			stop := updateState(b, 10*time.Millisecond)
			defer stop()
			if err := px.SetDrop(drop, drop); err != nil {
				t.Fatal(err)
			}

			const window = 4 * time.Second
			var stale []time.Duration
			epochs := map[uint64]bool{}
			deadline := time.After(window)
			var lastArrival time.Time
		collect:
			for {
				select {
				case st := <-ch:
					now := time.Now()
					stale = append(stale, now.Sub(time.Unix(0, st.GetUnixNano())))
					epochs[st.GetEpoch()] = true
					lastArrival = now
				case <-deadline:
					break collect
				}
			}
			end := time.Now()

			pst := px.Stats()
			if len(stale) == 0 {
				t.Fatalf("no snapshot arrived in %v under %.0f%% loss", window, drop*100)
			}
			slices.Sort(stale)
			p50, p99 := stale[len(stale)/2], stale[(len(stale)-1)*99/100]
			t.Logf("drop %.0f%%: %d snapshots (%d epochs of ~%d published) in %v; staleness p50 %v p99 %v max %v; proxy dropped %d/%d to the client, %d/%d to the agent; client reconnects %d",
				drop*100, len(stale), len(epochs), int(window/(10*time.Millisecond)), window,
				p50.Round(time.Millisecond), p99.Round(time.Millisecond), stale[len(stale)-1].Round(time.Millisecond),
				pst.ServerToClient.Dropped, pst.ServerToClient.Packets, pst.ClientToServer.Dropped, pst.ClientToServer.Packets, c.Reconnects())
			// A decide call under the same loss completes (QUIC retransmits).
			// At 80% loss a request and its answer each get through one try
			// in five, and QUIC doubles its probe timeout after every try
			// that goes unanswered: most calls take under a second, a few
			// several (4.6 s seen), and one run of an earlier session passed
			// 30 s. The bound says the call completes, not how fast.
			t0 := time.Now()
			dctx, dcancel := context.WithTimeout(ctx, 90*time.Second)
			resp, err := c.Decide(dctx, sampleTasks(4))
			dcancel()
			if err != nil {
				t.Fatalf("decide under %.0f%% loss: %v (server requests %d, proxy %+v)", drop*100, err, ts.Stats().Requests.Load(), px.Stats())
			}
			t.Logf("drop %.0f%%: decide of %d tasks took %v (reconnects %d)", drop*100, len(resp.GetDecisions()), time.Since(t0).Round(time.Millisecond), c.Reconnects())
			// Fresh state keeps flowing: distinct snapshots all through the
			// window (on a congested path the agent paces snapshots to one per
			// 50ms so they do not queue up stale; at 80% loss 20-60 arrive in
			// 4s), none missing for 2s at the end, the typical one well under
			// a second old.
			const minEpochs = 10
			if len(epochs) < minEpochs {
				t.Errorf("only %d distinct snapshots in %v, want at least %d", len(epochs), window, minEpochs)
			}
			if gap := end.Sub(lastArrival); gap > 2*time.Second {
				t.Errorf("no snapshot in the last %v of the window", gap.Round(time.Millisecond))
			}
			if p50 > 500*time.Millisecond {
				t.Errorf("median staleness %v", p50)
			}
			if pst.ServerToClient.Dropped == 0 {
				t.Error("the proxy dropped nothing")
			}
		})
	}
}
