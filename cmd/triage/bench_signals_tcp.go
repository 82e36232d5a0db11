package main

import (
	"net"
	"sync"
	"time"
)

var (
	loadListenerOnce sync.Once
	loadListener     net.Listener
)

// tcpConnectOnce opens and closes one loopback connection to a listener
// the bench keeps for its lifetime (TCP state changes for tcpstat).
func tcpConnectOnce() {
	loadListenerOnce.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return
		}
		loadListener = ln
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
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
