package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/triage-agent/triage/agent/serve"
)

type agentProcessConfig struct {
	bin, dir, model string
	noEBPF          bool
	workers         int
}

// agentProcess is a `triage agent` the bench runs as a child, so that its
// CPU time and memory are its own and measurable.
type agentProcess struct {
	cmd                              *exec.Cmd
	pid                              int
	quicAddr, adminAddr, fingerprint string
	stopped                          bool
}

// servingLine is the agent's "serving" log line; the TCP address (absent
// when the TCP side is off) sits between the QUIC and admin addresses.
var servingLine = regexp.MustCompile(`msg="triage agent serving" quic=(\S+) (?:tcp=\S+ )?admin=(\S+) .*fingerprint=([0-9a-f]{64})`)

// startAgentProcess runs `triage agent` on loopback ports chosen by the
// kernel, with a certificate written here so the client can pin it, and
// waits for /readyz.
func startAgentProcess(ctx context.Context, c agentProcessConfig) (*agentProcess, error) {
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
		"--tls-cert", certFile, "--tls-key", keyFile,
		"--experience-dir", filepath.Join(c.dir, "experience"), "--flamegraph-dir", filepath.Join(c.dir, "flamegraphs"),
		"--flamegraph-interval", "10s", "--workers", strconv.Itoa(c.workers)}
	if c.model != "" {
		args = append(args, "--model", c.model)
	}
	if c.noEBPF {
		args = append(args, "--no-ebpf")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	// Flags win over the environment: a TRIAGE_* of the caller's shell
	// cannot move the bench's agent off loopback.
	cmd.Env = os.Environ()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s agent: %w", bin, err)
	}
	ap := &agentProcess{cmd: cmd, pid: cmd.Process.Pid}
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if m := servingLine.FindStringSubmatch(line); m != nil && !sent {
				found <- m
				sent = true
			}
			if strings.Contains(line, "level=ERROR") {
				fmt.Fprintln(os.Stderr, "agent:", line)
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case m, ok := <-found:
		if !ok {
			cmd.Wait()
			return nil, errors.New("the agent exited before serving (run `triage agent` to see why)")
		}
		ap.quicAddr, ap.adminAddr, ap.fingerprint = m[1], m[2], m[3]
	case <-time.After(60 * time.Second):
		ap.stop()
		return nil, errors.New("the agent did not start serving within 60 s")
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

func (ap *agentProcess) stop() {
	if ap.stopped {
		return
	}
	ap.stopped = true
	ap.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { ap.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		ap.cmd.Process.Kill()
		<-done
	}
}
