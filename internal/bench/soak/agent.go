package soak

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/triage-agent/triage/agent/serve"
)

type agentConfig struct {
	bin, dir, model string
	noEBPF          bool
	expMaxBytes     int64
}

// agentProc is the `triage agent` child under soak.
type agentProc struct {
	cmd                              *exec.Cmd
	pid                              int
	quicAddr, adminAddr, fingerprint string

	stopOnce sync.Once
	waitErr  error
	exited   chan struct{}
	errLines []string // level=ERROR lines of its log, first few
	errMu    sync.Mutex
}

var servingLine = regexp.MustCompile(`msg="triage agent serving" quic=(\S+) .*admin=(\S+) .*fingerprint=([0-9a-f]{64})`)

// startAgent runs `triage agent` on loopback ports the kernel picks, with
// a certificate written here so the clients can pin it, and waits until
// it is ready.
func startAgent(ctx context.Context, c agentConfig) (*agentProc, error) {
	bin := c.bin
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding the triage binary: %w", err)
		}
	}
	certFile, keyFile := filepath.Join(c.dir, "cert.pem"), filepath.Join(c.dir, "key.pem")
	if _, err := serve.WriteSelfSigned(certFile, keyFile, "localhost", "127.0.0.1"); err != nil {
		return nil, err
	}
	args := []string{"agent", "--quic-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--tls-cert", certFile, "--tls-key", keyFile, "--model", c.model,
		"--experience-dir", filepath.Join(c.dir, "experience"), "--experience-max-bytes", strconv.FormatInt(c.expMaxBytes, 10),
		"--flamegraph-dir", filepath.Join(c.dir, "flamegraphs"), "--flamegraph-interval", "10s"}
	if c.noEBPF {
		args = append(args, "--no-ebpf")
	}
	cmd := exec.Command(bin, args...)
	// Flags win over the environment: a TRIAGE_* of the caller's shell
	// cannot move the soak's agent off loopback.
	cmd.Env = os.Environ()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s agent: %w", bin, err)
	}
	ap := &agentProc{cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{})}
	found := make(chan []string, 1)
	go ap.readLog(stderr, found)
	go func() { ap.waitErr = cmd.Wait(); close(ap.exited) }()
	select {
	case m, ok := <-found:
		if !ok {
			<-ap.exited
			return nil, fmt.Errorf("the agent exited before serving: %v %s", ap.waitErr, strings.Join(ap.errorLines(), "; "))
		}
		ap.quicAddr, ap.adminAddr, ap.fingerprint = m[1], m[2], m[3]
	case <-time.After(60 * time.Second):
		ap.stop()
		return nil, errors.New("the agent did not start serving within 60 s")
	case <-ctx.Done():
		ap.stop()
		return nil, ctx.Err()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + ap.adminAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return ap, nil
			}
		}
		if time.Now().After(deadline) {
			ap.stop()
			return nil, errors.New("the agent was not ready within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readLog finds the serving line and keeps the first error lines; the rest
// of the log (a line per malformed frame) is read and dropped.
func (ap *agentProc) readLog(r io.Reader, found chan<- []string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		if m := servingLine.FindStringSubmatch(line); m != nil && !sent {
			found <- m
			sent = true
		}
		if strings.Contains(line, "level=ERROR") {
			ap.errMu.Lock()
			if len(ap.errLines) < 20 {
				ap.errLines = append(ap.errLines, line)
			}
			ap.errMu.Unlock()
		}
	}
	if !sent {
		close(found)
	}
}

func (ap *agentProc) errorLines() []string {
	ap.errMu.Lock()
	defer ap.errMu.Unlock()
	return append([]string(nil), ap.errLines...)
}

// stop ends the agent with SIGTERM (a clean close: the experience log is
// synced), or SIGKILL after 20 s.
func (ap *agentProc) stop() {
	ap.stopOnce.Do(func() {
		ap.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-ap.exited:
		case <-time.After(20 * time.Second):
			ap.cmd.Process.Kill()
			<-ap.exited
		}
	})
}

// err is why the agent did not end cleanly, or nil.
func (ap *agentProc) err() error {
	select {
	case <-ap.exited:
	default:
		return errors.New("the agent is still running")
	}
	if ap.waitErr != nil {
		return fmt.Errorf("the agent ended with %v (its errors: %s)", ap.waitErr, strings.Join(ap.errorLines(), "; "))
	}
	return nil
}

// alive reports whether the agent process is still running.
func (ap *agentProc) alive() bool {
	select {
	case <-ap.exited:
		return false
	default:
		return true
	}
}

// metrics is one scrape of /metrics: sample line (name with labels) to value.
type metrics map[string]float64

func (m metrics) sumPrefix(prefix string) float64 {
	var s float64
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			s += v
		}
	}
	return s
}

// scrape reads the agent's /metrics; an empty map when it cannot.
func (ap *agentProc) scrape() metrics {
	m := metrics{}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + ap.adminAddr + "/metrics")
	if err != nil {
		return m
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if x, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = x
		}
	}
	return m
}
