package faulttest

import (
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ListenBacklog opens a TCP listener on 127.0.0.1 with the given listen()
// backlog (net.Listen always asks for somaxconn) that never accepts, and
// returns its port; it closes when t ends. With DialBurst its accept queue
// fills and overflows, the fault the accept-queue signal reports.
func ListenBacklog(t testing.TB, backlog int) uint16 {
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
	return uint16(sa.(*unix.SockaddrInet4).Port)
}

// DialBurst starts n connects to port on 127.0.0.1 that nobody accepts;
// those that connect stay open until the test ends.
func DialBurst(t testing.TB, port uint16, n int, timeout time.Duration) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	for i := 0; i < n; i++ {
		go func() {
			c, err := net.DialTimeout("tcp", addr, timeout)
			if err == nil {
				t.Cleanup(func() { c.Close() })
			}
		}()
	}
}
