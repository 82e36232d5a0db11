package agentproc

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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/internal/bench/proc"
)

// Waits of Start and Stop: the agent loads its model and attaches its
// probes before it logs the serving line; a clean stop syncs the
// experience log, which after a long soak holds hundreds of MB.
const (
	servingTimeout = 60 * time.Second
	readyTimeout   = 30 * time.Second
	stopGrace      = 20 * time.Second
	keptErrorLines = 20
)

// Config is what the child runs with.
type Config struct {
	Bin    string // the triage binary; "": this process's own
	Dir    string // holds cert.pem, key.pem, experience/ and flamegraphs/
	Model  string // --model; "": the embedded default
	NoEBPF bool   // --no-ebpf: procfs signals, no profiler
	// ExtraArgs are further flags of `triage agent` the caller needs
	// (--workers N, --experience-max-bytes N).
	ExtraArgs []string
	// Env is further environment of the child, KEY=VALUE, over the
	// caller's: a setting a binary of any age may be given, since an agent
	// reads only the TRIAGE_* variables of the flags it has, where it
	// refuses a flag it does not know.
	Env []string
	// ErrorLog, when set, receives each level=ERROR line of the agent's
	// log as it comes, prefixed "agent: ".
	ErrorLog io.Writer
}

// Process is a running `triage agent` child.
type Process struct {
	PID                              int
	QUICAddr, AdminAddr, Fingerprint string

	cmd      *exec.Cmd
	errLog   io.Writer
	stopOnce sync.Once
	waitErr  error
	exited   chan struct{}
	errMu    sync.Mutex
	errLines []string // the first keptErrorLines level=ERROR lines of its log
}

// Start runs `triage agent` and returns once it serves and its /readyz
// answers 200. The certificate is written to c.Dir for the caller to pin
// (Fingerprint); the log is forced to text, the format the serving line
// is parsed in.
func Start(ctx context.Context, c Config) (*Process, error) {
	bin := c.Bin
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding the triage binary: %w", err)
		}
	}
	certFile, keyFile := filepath.Join(c.Dir, "cert.pem"), filepath.Join(c.Dir, "key.pem")
	if _, err := serve.WriteSelfSigned(certFile, keyFile, "localhost", "127.0.0.1"); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, c.args(certFile, keyFile)...)
	// Flags win over the environment: a TRIAGE_* of the caller's shell
	// cannot move the bench's agent off loopback.
	cmd.Env = append(os.Environ(), c.Env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s agent: %w", bin, err)
	}
	p := &Process{PID: cmd.Process.Pid, cmd: cmd, errLog: c.ErrorLog, exited: make(chan struct{})}
	found := make(chan servingAddrs, 1)
	go p.readLog(stderr, found)
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	select {
	case a, ok := <-found:
		if !ok {
			<-p.exited
			return nil, fmt.Errorf("the agent exited before serving: %v %s", p.waitErr, strings.Join(p.ErrorLines(), "; "))
		}
		p.QUICAddr, p.AdminAddr, p.Fingerprint = a.quic, a.admin, a.fingerprint
	case <-time.After(servingTimeout):
		p.Stop()
		return nil, fmt.Errorf("the agent did not start serving within %v", servingTimeout)
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
	if err := p.waitReady(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (c Config) args(certFile, keyFile string) []string {
	args := []string{"agent", "--quic-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--tls-cert", certFile, "--tls-key", keyFile, "--log-format", "text",
		"--experience-dir", filepath.Join(c.Dir, "experience"),
		"--flamegraph-dir", filepath.Join(c.Dir, "flamegraphs"), "--flamegraph-interval", "10s"}
	if c.Model != "" {
		args = append(args, "--model", c.Model)
	}
	if c.NoEBPF {
		args = append(args, "--no-ebpf")
	}
	return append(args, c.ExtraArgs...)
}

// waitReady polls /readyz until it answers 200.
func (p *Process) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := http.Get("http://" + p.AdminAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the agent was not ready within %v", readyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return fmt.Errorf("the agent exited before it was ready: %v %s", p.waitErr, strings.Join(p.ErrorLines(), "; "))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// readLog finds the serving line and keeps the first error lines; the rest
// of the log (a line per malformed frame under soak) is read and dropped,
// so that the agent never blocks on a full pipe.
func (p *Process) readLog(r io.Reader, found chan<- servingAddrs) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		if !sent {
			if a, ok := parseServingLine(line); ok {
				found <- a
				sent = true
			}
		}
		if strings.Contains(line, "level=ERROR") {
			if p.errLog != nil {
				fmt.Fprintln(p.errLog, "agent:", line)
			}
			p.errMu.Lock()
			if len(p.errLines) < keptErrorLines {
				p.errLines = append(p.errLines, line)
			}
			p.errMu.Unlock()
		}
	}
	if !sent {
		close(found)
	}
}

// ErrorLines are the first level=ERROR lines of the agent's log.
func (p *Process) ErrorLines() []string {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return append([]string(nil), p.errLines...)
}

// Stop ends the agent with SIGTERM (a clean close: the experience log is
// synced), or SIGKILL after stopGrace. It may be called more than once.
func (p *Process) Stop() {
	p.stopOnce.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopGrace):
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
}

// Err is why the agent did not end cleanly, or nil; an error while it
// still runs.
func (p *Process) Err() error {
	if p.Alive() {
		return errors.New("the agent is still running")
	}
	if p.waitErr != nil {
		return fmt.Errorf("the agent ended with %v (its errors: %s)", p.waitErr, strings.Join(p.ErrorLines(), "; "))
	}
	return nil
}

// Alive reports whether the agent process is still running.
func (p *Process) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Usage is the agent's CPU time so far and its memory now.
func (p *Process) Usage() (proc.Usage, error) { return proc.ReadUsage(p.PID) }
