package signals

import (
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-agent/triage/internal/bench/proc"
)

// pingPong runs rounds pipe round trips between two threads pinned to the
// same CPU and returns ns per context switch (2 per round trip).
func pingPong(rounds int) (float64, error) {
	var p1, p2 [2]int
	if err := unix.Pipe2(p1[:], unix.O_CLOEXEC); err != nil {
		return 0, err
	}
	if err := unix.Pipe2(p2[:], unix.O_CLOEXEC); err != nil {
		return 0, err
	}
	defer func() {
		for _, fd := range []int{p1[0], p1[1], p2[0], p2[1]} {
			unix.Close(fd)
		}
	}()
	var set unix.CPUSet
	set.Set(0)
	pin := func() error {
		runtime.LockOSThread()
		return unix.SchedSetaffinity(0, &set)
	}
	errc := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		defer runtime.UnlockOSThread()
		if err := pin(); err != nil {
			errc <- err
			close(ready)
			return
		}
		close(ready)
		b := []byte{0}
		for i := 0; i < rounds; i++ {
			if _, err := unix.Read(p1[0], b); err != nil {
				errc <- err
				return
			}
			if _, err := unix.Write(p2[1], b); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	<-ready
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	unix.SchedGetaffinity(0, &old)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return 0, err
	}
	defer unix.SchedSetaffinity(0, &old)
	b := []byte{0}
	start := time.Now()
	for i := 0; i < rounds; i++ {
		if _, err := unix.Write(p1[1], b); err != nil {
			return 0, err
		}
		if _, err := unix.Read(p2[0], b); err != nil {
			return 0, err
		}
	}
	el := time.Since(start)
	if err := <-errc; err != nil {
		return 0, err
	}
	return float64(el.Nanoseconds()) / float64(2*rounds), nil
}

// getppidLoop makes calls getppid() system calls on one thread and returns
// ns per call.
func getppidLoop(calls int) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	for i := 0; i < calls; i++ {
		unix.Getppid()
	}
	return float64(time.Since(start).Nanoseconds()) / float64(calls)
}

// startProbeLoad keeps every probe busy until stopped: a ping-pong
// (context switches), fsync'd writes (block I/O) and loopback connects
// (TCP state changes), each bounded to one goroutine.
func startProbeLoad() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	loop := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
					f()
				}
			}
		}()
	}
	loop(func() { pingPong(10000) })
	dir, _ := os.MkdirTemp("", "triage-bench-signals-")
	loop(func() {
		f, err := os.CreateTemp(dir, "w")
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			return
		}
		f.Write(make([]byte, 4096))
		f.Sync()
		f.Close()
		os.Remove(f.Name())
		time.Sleep(5 * time.Millisecond)
	})
	loop(func() { tcpConnectOnce(); time.Sleep(2 * time.Millisecond) })
	return func() { close(done); wg.Wait(); os.RemoveAll(dir) }
}

var (
	loadListenerOnce sync.Once
	loadListener     net.Listener
)

// tcpConnectOnce opens and closes one loopback connection to a listener
// the bench keeps for its lifetime (TCP state changes for tcpstat).
func tcpConnectOnce() {
	loadListenerOnce.Do(func() {
		ln, err := proc.ListenClosingEach()
		if err != nil {
			return
		}
		loadListener = ln
	})
	if loadListener == nil {
		time.Sleep(100 * time.Millisecond)
		return
	}
	c, err := net.DialTimeout("tcp", loadListener.Addr().String(), time.Second)
	if err == nil {
		c.Close()
	}
}
