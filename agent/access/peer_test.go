package access

import "testing"

func TestLoopbackPeer(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:5555":          true,
		"127.8.9.10:1":            true,
		"[::1]:9090":              true,
		"[::ffff:127.0.0.1]:9090": true,
		"10.0.0.7:40000":          false,
		"192.168.1.20:80":         false,
		"[::ffff:10.0.0.7]:80":    false,
		"[fe80::1%eth0]:80":       false,
		"[2001:db8::1]:443":       false,
		"0.0.0.0:1":               false,
		"localhost:80":            false, // a name is never trusted
		"":                        false,
		"garbage":                 false,
		"127.0.0.1":               true, // no port: the host alone
	} {
		if got := LoopbackPeer(addr); got != want {
			t.Errorf("LoopbackPeer(%q) = %v, want %v", addr, got, want)
		}
	}
}
