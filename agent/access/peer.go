package access

import (
	"net"
	"net/netip"
)

// LoopbackPeer reports whether remoteAddr ("host:port", as in
// http.Request.RemoteAddr) is a loopback address: 127.0.0.0/8, ::1, or an
// IPv4 loopback mapped into IPv6. Without credentials configured, only such
// a peer may use the admin port's protected endpoints: a process on the
// node itself, which could read the agent's state directory anyway.
func LoopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false // a name, or nothing: never trusted
	}
	return ip.Unmap().IsLoopback()
}
