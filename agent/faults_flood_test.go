package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/internal/bench/measure"
	"github.com/triage-agent/triage/internal/faulttest"
	"github.com/triage-agent/triage/internal/testchild"
	"github.com/triage-agent/triage/wire"
)

// Fault: the endpoint takes 1,000 QUIC connection attempts a second from
// one address (127.0.0.1), each held open for a second when it gets
// through, while a well-behaved client on another address (127.0.0.2)
// decides at a steady pace over its one connection. Kept: the per-address
// limits hold (new connections a second, and connections open at once),
// and the well-behaved client's p99 stays within 2x of its idle p99. And
// before it, a reconnect storm (64 clients of one address at once) passes
// the default limits.
//
// The flood is paused and resumed (SIGSTOP, SIGCONT) every 600 ms and the
// client's calls are pooled by phase, so that whatever else loads the
// machine weighs on both figures alike. On a machine shared with other
// jobs (CI runs two test binaries at once on two cores) a p99 still moves
// with them, so the measurement is tried up to three times and one that
// holds passes: without the per-address limits every attempt costs the
// agent a handshake and a held connection, and every try fails (the p99
// went up 2.2 to 9.6 times in three tries on a 2-core VM, 2026-12-04).
// The agent runs with every probe this kernel supports, as deployed.
func TestFaultConnectionFloodFromOneAddress(t *testing.T) {
	faulttest.Long(t, "a connection flood")
	ta := startAgent(t, Config{})
	addr := ta.QUICAddr().(*net.UDPAddr)
	reconnectStorm(t, "127.0.0.3", addr, ta.Fingerprint(), serve.DefaultMaxConnsPerIP)
	good := dialFrom(t, "127.0.0.2", addr, ta.Fingerprint())
	for try := 1; ; try++ {
		p99Idle, p99Flood := floodTry(t, addr, ta.Fingerprint(), good)
		if p99Flood <= 2*p99Idle {
			return
		}
		if try == 3 {
			t.Fatalf("the well-behaved client's p99 went from %v to %v under the flood, more than 2x (the last of %d tries)", p99Idle, p99Flood, try)
		}
		t.Logf("try %d: p99 %v idle, %v flooded: more than 2x, trying again", try, p99Idle, p99Flood)
	}
}

// floodTry runs one flood, alternating with quiet, checks the limits and
// returns the well-behaved client's p99 without and with the flood.
func floodTry(t *testing.T, addr *net.UDPAddr, fingerprint string, good *client.Client) (p99Idle, p99Flood time.Duration) {
	t.Helper()
	const (
		floodRate = 1000
		cycles    = 12
		phase     = 600 * time.Millisecond
		// Calls this soon after a switch are not counted: resuming the
		// flood starts with a burst (the bucket refilled, held connections
		// due to close), which a steady flood does not have.
		settle   = 150 * time.Millisecond
		callRate = 400
	)
	lifetime := 2*cycles*phase + time.Second
	fl := startFlood(t, addr, fingerprint, floodRate, lifetime)
	var idle, flooded []time.Duration
	var floodOn time.Duration
	for p := range 2 * cycles {
		on := p%2 == 1
		fl.signal(t, on)
		start := time.Now()
		lat := paced(t, good, phase, callRate, settle)
		if on {
			flooded = append(flooded, lat...)
			floodOn += time.Since(start)
		} else {
			idle = append(idle, lat...)
		}
	}
	st := fl.wait(t)

	t.Logf("flood: %d attempts in %v of flooding (%.0f/s), %d served, %d refused, at most %d served at once",
		st.Attempts, floodOn, float64(st.Attempts)/floodOn.Seconds(), st.Served, st.Refused, st.MaxServed)
	if st.MaxServed > serve.DefaultMaxConnsPerIP {
		t.Errorf("%d connections from one address served at once, the limit is %d", st.MaxServed, serve.DefaultMaxConnsPerIP)
	}
	// The bucket holds a second's worth and refills at the rate, paused
	// or not, over the flood process's life.
	if limit := int64(serve.DefaultMaxNewConnsPerIP * (lifetime.Seconds() + 2)); st.Served > limit {
		t.Errorf("%d connections served in %v, over the %d a second allowed", st.Served, lifetime, serve.DefaultMaxNewConnsPerIP)
	}
	if float64(st.Attempts) < 0.7*floodRate*floodOn.Seconds() {
		t.Errorf("only %d attempts in %v: the flood did not run at its rate", st.Attempts, floodOn)
	}
	slices.Sort(idle)
	slices.Sort(flooded)
	p99Idle, p99Flood = measure.Quantile(idle, 0.99), measure.Quantile(flooded, 0.99)
	t.Logf("well-behaved client: p50 %v idle, %v flooded; p99 %v idle, %v flooded (%d and %d calls)",
		measure.Quantile(idle, 0.5), measure.Quantile(flooded, 0.5), p99Idle, p99Flood, len(idle), len(flooded))
	return p99Idle, p99Flood
}

// reconnectStorm connects n clients from ip at once, as an upstream does
// when its agent restarts, each retrying a refused dial after 50 ms as the
// client's own reconnects do: every one must be through within 5 s. (The
// QUIC library refuses handshakes that finish while 32 others wait to be
// accepted, so a storm can see a few refusals on a busy machine; the
// rate limit must not add any.)
func reconnectStorm(t *testing.T, ip string, to *net.UDPAddr, fingerprint string, n int) {
	t.Helper()
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatalf("binding %s: %v", ip, err)
	}
	tr := &quic.Transport{Conn: udp}
	defer tr.Close()
	type result struct {
		cl      *client.Client
		retries int
		err     error
	}
	results := make(chan result, n)
	deadline := time.Now().Add(5 * time.Second)
	for range n {
		go func() {
			var r result
			for {
				r.cl, r.err = client.Dial(context.Background(), to.String(), client.Config{PinSHA256: fingerprint, ServerName: "localhost", Transport: tr, Logger: quietLogger()})
				if r.err == nil || time.Now().After(deadline) {
					break
				}
				r.retries++
				time.Sleep(50 * time.Millisecond)
			}
			results <- r
		}()
	}
	retried := 0
	for range n {
		r := <-results
		if r.err != nil {
			t.Errorf("reconnect storm: a client still refused after %d retries: %v", r.retries, r.err)
			continue
		}
		defer r.cl.Close()
		if r.retries > 0 {
			retried++
		}
	}
	t.Logf("reconnect storm: %d clients of %s connected at once, %d of them after a retry", n, ip, retried)
}

// dialFrom connects a client whose UDP socket is bound to ip.
func dialFrom(t *testing.T, ip string, to *net.UDPAddr, fingerprint string) *client.Client {
	t.Helper()
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatalf("binding %s: %v", ip, err)
	}
	tr := &quic.Transport{Conn: udp}
	t.Cleanup(func() { tr.Close() })
	cl, err := client.Dial(context.Background(), to.String(), client.Config{PinSHA256: fingerprint, ServerName: "localhost", Transport: tr, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("dialing from %s: %v", ip, err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// paced decides one task every 1/rate s for d and returns each call's
// round trip, leaving out the calls of the first skip.
func paced(t *testing.T, cl *client.Client, d time.Duration, rate int, skip time.Duration) []time.Duration {
	t.Helper()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var out []time.Duration
	begin := time.Now()
	task := []*wire.Task{{TaskId: "well-behaved", Class: "scoring", SlaMs: 50, CostMs: 5}}
	for time.Since(begin) < d {
		<-tick.C
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cl.Decide(ctx, task)
		cancel()
		if err != nil {
			t.Fatalf("the well-behaved client's call failed: %v", err)
		}
		if start.Sub(begin) >= skip {
			out = append(out, time.Since(start))
		}
	}
	return out
}

// The flood runs in a child process (this test binary, re-executed) under
// SCHED_IDLE: it stands for clients on other machines, whose CPU is not
// the node's, and its goroutines must not queue behind or ahead of the
// well-behaved client's in one Go scheduler. It costs about half a core
// here (TLS client state and a key share per attempt), CPU that clients
// elsewhere would not take from the node; at a nice value it still
// competes with the agent and the client. An idle-policy child gets only
// CPU that nothing else wants (the test checks that it still reached its
// rate), and one P, which cuts its CPU by about a sixth.
const floodEnv = "TRIAGE_AGENT_TEST_FLOOD" // "ADDR RATE MILLISECONDS FINGERPRINT"

func init() {
	if spec := os.Getenv(floodEnv); spec != "" {
		os.Exit(runFlood(spec))
	}
}

// floodStats is what the flood child reports, as one JSON line.
type floodStats struct {
	Attempts  int64 `json:"attempts"`
	Served    int64 `json:"served"`     // connections the agent admitted (Hello answered)
	Refused   int64 `json:"refused"`    // attempts refused, before or after the handshake
	MaxServed int64 `json:"max_served"` // admitted connections open at once, at most
}

// runFlood makes QUIC connection attempts from 127.0.0.1 at a fixed rate,
// all from one UDP socket. An attempt the agent admits (its Hello is
// answered: admission precedes serving) is held for a second, counted open
// from the answer until just before it is closed, so the count never
// exceeds what the agent holds. The ClientHello offers X25519 alone, the
// cheapest key share to make, so that the flood reaches its rate from a
// low-priority process; the agent's cost per handshake is bounded by the
// same limits whatever the key share.
func runFlood(spec string) int {
	var addr, fp string
	var rate, ms int
	if _, err := fmt.Sscan(spec, &addr, &rate, &ms, &fp); err != nil {
		fmt.Fprintln(os.Stderr, "flood spec:", err)
		return 2
	}
	to, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	tr := &quic.Transport{Conn: udp}
	tc := (&client.Config{PinSHA256: fp}).TLSConfig("localhost", wire.ALPNNative)
	tc.CurvePreferences = []tls.CurveID{tls.X25519}
	qc := &quic.Config{HandshakeIdleTimeout: time.Second, MaxIdleTimeout: 5 * time.Second}
	var st floodStats
	var open atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	end := time.Now().Add(time.Duration(ms) * time.Millisecond)
	for now := range tick.C {
		if now.After(end) {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := floodAttempt(tr, to, tc, qc)
			mu.Lock()
			st.Attempts++
			if err != nil {
				st.Refused++
				mu.Unlock()
				return
			}
			st.Served++
			n := open.Add(1)
			st.MaxServed = max(st.MaxServed, n)
			mu.Unlock()
			time.Sleep(time.Second)
			open.Add(-1)
			conn.CloseWithError(0, "flood")
		}()
	}
	tick.Stop()
	wg.Wait()
	tr.Close()
	json.NewEncoder(os.Stdout).Encode(st)
	return 0
}

// floodAttempt dials and says Hello; the connection is returned only when
// the agent answered HelloOk.
func floodAttempt(tr *quic.Transport, to *net.UDPAddr, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := tr.Dial(ctx, to, tc, qc)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*quic.Conn, error) {
		conn.CloseWithError(0, "flood")
		return nil, err
	}
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return fail(err)
	}
	fw, err := wire.NewFrameWriter(str, wire.CallOptions()...)
	if err != nil {
		return fail(err)
	}
	fr, err := wire.NewFrameReader(str, 0, wire.CallOptions()...)
	if err != nil {
		return fail(err)
	}
	if err := fw.Write(&wire.Envelope{Body: &wire.Envelope_Hello{Hello: &wire.Hello{Version: wire.ProtocolVersion}}}); err != nil {
		return fail(err)
	}
	str.SetReadDeadline(time.Now().Add(2 * time.Second))
	var env wire.Envelope
	if err := fr.Read(&env); err != nil {
		return fail(err)
	}
	if env.GetHelloOk() == nil {
		return fail(fmt.Errorf("hello answered with %v", env.GetBody()))
	}
	return conn, nil
}

// floodChild is the running flood process.
type floodChild struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// startFlood runs the flood child for d, under SCHED_IDLE.
func startFlood(t *testing.T, to *net.UDPAddr, fingerprint string, rate int, d time.Duration) *floodChild {
	t.Helper()
	f := &floodChild{cmd: testchild.Command(fmt.Sprintf("%s=%s %d %d %s", floodEnv, to, rate, int(d/time.Millisecond), fingerprint), "GOMAXPROCS=1")}
	f.cmd.Stdout, f.cmd.Stderr = &f.out, os.Stderr
	testchild.StartIdle(t, f.cmd)
	return f
}

// signal resumes (on) or pauses the flood.
func (f *floodChild) signal(t *testing.T, on bool) {
	t.Helper()
	sig := syscall.SIGSTOP
	if on {
		sig = syscall.SIGCONT
	}
	if err := f.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signalling the flood: %v", err)
	}
}

// wait resumes the flood, waits for its end and returns its report.
func (f *floodChild) wait(t *testing.T) floodStats {
	t.Helper()
	f.signal(t, true)
	if err := f.cmd.Wait(); err != nil {
		t.Fatalf("flood child: %v\n%s", err, f.out.Bytes())
	}
	var st floodStats
	if err := json.Unmarshal(f.out.Bytes(), &st); err != nil {
		t.Fatalf("flood child said %q: %v", f.out.Bytes(), err)
	}
	return st
}
