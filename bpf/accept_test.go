package bpf

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listenBacklog opens a TCP listener on 127.0.0.1 with the given listen()
// backlog (net.Listen always asks for somaxconn) and returns fd and port.
func listenBacklog(t testing.TB, backlog int) (int, uint16) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, backlog); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, uint16(sa.(*unix.SockaddrInet4).Port)
}

// dialBurst starts n connects that nobody accepts; they stay open until
// the test ends.
func dialBurst(t testing.TB, port uint16, n int, timeout time.Duration) {
	addr := (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(port)}).String()
	for i := 0; i < n; i++ {
		go func() {
			c, err := net.DialTimeout("tcp", addr, timeout)
			if err == nil {
				t.Cleanup(func() { c.Close() })
			}
		}()
	}
}

func TestAcceptQueueFillsWithTinyBacklog(t *testing.T) {
	requireBPF(t)
	a, err := OpenAccept(AcceptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, port := listenBacklog(t, 2)
	_, other := listenBacklog(t, 16)
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
	dialBurst(t, port, 8, 3*time.Second)
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
