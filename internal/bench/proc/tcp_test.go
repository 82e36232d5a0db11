package proc

import (
	"io"
	"net"
	"testing"
	"time"
)

// A dialed connection is accepted and closed by the listener (the client
// reads EOF); once the listener is closed, dialing is refused.
func TestListenClosingEachClosesWhatItAccepts(t *testing.T) {
	ln, err := ListenClosingEach()
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Fatalf("read %d bytes, %v: want EOF from a connection the listener closed", n, err)
		}
		c.Close()
	}
	ln.Close()
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("dialed a closed listener")
	}
}
