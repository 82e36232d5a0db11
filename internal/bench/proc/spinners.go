package proc

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
)

// spinScript is the busy loop of one spinner process: a shell builtin
// loop, so the shell itself spins and has no child of its own to orphan.
const spinScript = "while :; do :; done"

// Spinners are busy-loop processes, so that their CPU time is not the
// caller's. They never outlive the caller: Close kills them, and each is
// started with a parent-death signal (SIGKILL) for when the caller dies
// first, however it dies.
type Spinners struct {
	cmds    []*exec.Cmd
	release chan struct{} // ends the goroutine that holds the forking thread
}

// StartSpinners starts n spinner processes.
func StartSpinners(n int) (*Spinners, error) {
	if n < 0 || n > 4096 {
		return nil, fmt.Errorf("%d spinners: want 0..4096", n)
	}
	s := &Spinners{release: make(chan struct{})}
	started := make(chan error, 1)
	// The parent-death signal fires when the thread that forked the child
	// exits, not only the process, and the Go runtime ends a thread when a
	// goroutine exits while locked to it. So the spinners are forked from a
	// thread this goroutine holds locked, and keeps, until Close.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := 0; i < n; i++ {
			c := exec.Command("sh", "-c", spinScript)
			c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := c.Start(); err != nil {
				started <- fmt.Errorf("starting spinner %d of %d: %w", i+1, n, err)
				<-s.release
				return
			}
			s.cmds = append(s.cmds, c)
		}
		started <- nil
		<-s.release
	}()
	if err := <-started; err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Pids are the spinners' process ids.
func (s *Spinners) Pids() []int {
	pids := make([]int, len(s.cmds))
	for i, c := range s.cmds {
		pids[i] = c.Process.Pid
	}
	return pids
}

// Close kills the spinners and waits for them to exit.
func (s *Spinners) Close() error {
	if s.cmds == nil && s.release == nil {
		return nil
	}
	var errs []error
	for _, c := range s.cmds {
		if err := c.Process.Kill(); err != nil {
			errs = append(errs, err)
		}
		c.Wait() // the error is the SIGKILL just sent
	}
	s.cmds = nil
	close(s.release)
	s.release = nil
	return errors.Join(errs...)
}
