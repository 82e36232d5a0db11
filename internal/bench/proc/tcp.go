package proc

import (
	"fmt"
	"net"
)

// ListenClosingEach listens on a loopback TCP port and closes every
// connection it accepts, until the listener is closed: the cheapest peer
// for a load that only needs TCP connections to open and close (the state
// changes the tcpstat probe counts). The bpf tests and the signals bench
// both dial one.
func ListenClosingEach() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on loopback: %w", err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln, nil
}
