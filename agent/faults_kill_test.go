package agent

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/internal/faulttest"
	"github.com/triage-agent/triage/internal/testchild"
)

// Fault: the agent process is killed with SIGKILL 30 times, each at a
// random moment while two clients stream decisions and outcomes, and
// restarted on the same ports. Kept: the log opens after every kill (the
// agent restarts on it, and a writer opened on a copy cuts at most one
// partial record), both clients resync by themselves after every restart,
// every outcome acknowledged by the process that decided it is in the log,
// and the whole log reads back strictly at the end. Lost: at most the one
// record being written at each kill, and outcomes acknowledged by a
// restarted agent for tasks its predecessor decided (it does not know
// them: triage_outcomes_unknown_total).
func TestFaultKilledRepeatedlyWhileStreaming(t *testing.T) {
	faulttest.Long(t, "30 SIGKILLs of a streaming agent")
	const kills = 30
	dir := t.TempDir()
	quicAddr, admin := freePorts(t)
	certFile, keyFile, fp := writeCert(t, dir)
	expDir := filepath.Join(dir, "experience")
	env := []string{childEnv + "=1", "CHILD_QUIC=" + quicAddr, "CHILD_ADMIN=" + admin, "CHILD_CERT=" + certFile, "CHILD_KEY=" + keyFile, "CHILD_EXP=" + expDir}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 16))
	t.Logf("kill moments from seed %d", seed)

	child := startChild(t, env, admin)
	ccfg := client.Config{PinSHA256: fp, ServerName: "localhost", MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
		// A SIGKILLed agent sends no CONNECTION_CLOSE and the restarted one
		// has no state for the old connection: the client notices through
		// the idle timeout, kept short here.
		IdleTimeout: time.Second, KeepAlive: 200 * time.Millisecond, Logger: quietLogger()}
	var streams []*streamer
	for i := range 2 {
		cl, err := client.Dial(context.Background(), quicAddr, ccfg)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		streams = append(streams, startStreamer(cl, uint64(i)<<40+1, 4, 2*time.Millisecond))
	}
	defer func() {
		for _, s := range streams {
			s.stop()
		}
	}()

	// resynced waits until both clients have made 3 calls to this process.
	resynced := func(k int) {
		marks := make([]int64, len(streams))
		for i, s := range streams {
			marks[i] = s.decided.Load()
		}
		waitFor(t, 20*time.Second, "both clients to resync after restart "+strconv.Itoa(k), func() bool {
			for i, s := range streams {
				if s.decided.Load() < marks[i]+3 {
					return false
				}
			}
			return true
		})
	}
	var truncated []int64
	for k := range kills {
		resynced(k)
		time.Sleep(time.Duration(rng.Int64N(int64(400 * time.Millisecond))))
		testchild.Kill(t, child.cmd)

		// What the kill left reads back (a torn tail is not an error), and
		// a writer opening it cuts at most the one partial record.
		if _, err := experience.ReadDirWith(expDir, experience.ReadOptions{}, nil); err != nil {
			t.Fatalf("kill %d: reading the log: %v", k, err)
		}
		truncated = append(truncated, openCopy(t, expDir))
		child = startChild(t, env, admin)
	}
	resynced(kills)
	for _, s := range streams {
		s.stop()
	}
	unknown := scrapeMetric(t, admin, "triage_outcomes_unknown_total")
	child.cmd.Process.Signal(syscall.SIGTERM)
	child.cmd.Wait()

	logged := map[string]bool{}
	st, err := experience.ReadDirWith(expDir, experience.ReadOptions{}, func(r experience.Record) error {
		if !r.TimedOut {
			logged[r.TaskID] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the log after %d kills: %v", kills, err)
	}
	frame := logBytes(t, expDir) / int64(max(st.Records, 1))
	for k, n := range truncated {
		if n >= frame+64 {
			t.Errorf("kill %d: opening the log cut %d bytes, more than one record (~%d bytes)", k, n, frame)
		}
	}
	var acked, lost, otherProcess int
	for _, s := range streams {
		all, same, _, _ := s.snapshot()
		acked += len(all)
		for _, id := range same {
			if !logged[strconv.FormatUint(id, 10)] {
				lost++
			}
		}
		otherProcess += len(all) - len(same)
		if s.cl.Reconnects() < kills {
			t.Errorf("a client reconnected %d times over %d kills", s.cl.Reconnects(), kills)
		}
	}
	if lost != 0 {
		t.Fatalf("%d outcomes acknowledged by the process that decided them are not in the log", lost)
	}
	cut := 0
	for _, n := range truncated {
		if n > 0 {
			cut++
		}
	}
	t.Logf("%d kills: %d outcomes acknowledged, %d records logged, %d kills left a partial record; %d acknowledged across a restart (%v unknown to the last process)",
		kills, acked, len(logged), cut, otherProcess, unknown)
}

// openCopy opens a writer on a copy of the log dir (the original is left
// for the restarted agent to repair) and returns the bytes it cut.
func openCopy(t *testing.T, dir string) int64 {
	t.Helper()
	cp := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		copyFile(t, filepath.Join(dir, e.Name()), filepath.Join(cp, e.Name()))
	}
	w, err := experience.Open(cp, experience.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatalf("opening the log after a kill: %v", err)
	}
	defer w.Close()
	return w.Stats().TruncatedBytes
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
}

func logBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if info, err := e.Info(); err == nil {
			n += info.Size()
		}
	}
	return n
}
