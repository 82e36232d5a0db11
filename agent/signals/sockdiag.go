package signals

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// SourceNetlink is a signal read from a kernel netlink interface (the
// sock_diag dump behind ss), used where eBPF is unavailable and procfs
// would be slower or less exact.
const SourceNetlink SourceKind = "netlink"

// ErrSockDiag is returned when a sock_diag dump cannot be read.
var ErrSockDiag = errors.New("sock_diag dump failed")

// Layouts from linux/inet_diag.h and linux/netlink.h.
const (
	nlmsgHdrLen      = 16
	inetDiagReqLen   = 56
	inetDiagMsgLen   = 72
	tcpListenState   = 10
	maxDiagDumpBytes = 4 << 20 // ~58k listeners: a dump past this is cut
)

// sockDiag lists listening TCP sockets through NETLINK_SOCK_DIAG with a
// LISTEN state filter, so the kernel walks only the listening hash
// (/proc/net/tcp and iter/tcp walk every bucket of the established hash,
// about a millisecond per read on a machine with a large table). For a
// listener the reply's rqueue is sk_ack_backlog and wqueue
// sk_max_ack_backlog: the exact fill, without privilege.
type sockDiag struct {
	req [nlmsgHdrLen + inetDiagReqLen]byte
	buf []byte
}

func newSockDiag() *sockDiag { return &sockDiag{buf: make([]byte, 32<<10)} }

// listeners calls fn for each IPv4 and IPv6 listening TCP socket.
func (d *sockDiag) listeners(fn func(port uint16, backlog, max uint32)) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return fmt.Errorf("%w: socket: %v", ErrSockDiag, err)
	}
	defer unix.Close(fd)
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		if err := d.dump(fd, family, fn); err != nil {
			return err
		}
	}
	return nil
}

func (d *sockDiag) dump(fd int, family uint8, fn func(port uint16, backlog, max uint32)) error {
	r := d.req[:]
	for i := range r {
		r[i] = 0
	}
	ne := binary.NativeEndian
	ne.PutUint32(r[0:], uint32(len(r)))
	ne.PutUint16(r[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(r[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	r[16] = family
	r[17] = unix.IPPROTO_TCP
	ne.PutUint32(r[20:], 1<<tcpListenState)
	if err := unix.Sendto(fd, r, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("%w: send: %v", ErrSockDiag, err)
	}
	total := 0
	for {
		n, _, err := unix.Recvfrom(fd, d.buf, 0)
		if err != nil {
			return fmt.Errorf("%w: recv: %v", ErrSockDiag, err)
		}
		if total += n; total > maxDiagDumpBytes {
			return fmt.Errorf("%w: dump larger than %d bytes", ErrSockDiag, maxDiagDumpBytes)
		}
		b := d.buf[:n]
		for len(b) >= nlmsgHdrLen {
			l := int(ne.Uint32(b[0:]))
			typ := ne.Uint16(b[4:])
			if l < nlmsgHdrLen || l > len(b) {
				return fmt.Errorf("%w: bad message length %d", ErrSockDiag, l)
			}
			switch typ {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if l >= nlmsgHdrLen+4 {
					if e := int32(ne.Uint32(b[16:])); e != 0 {
						return fmt.Errorf("%w: %v", ErrSockDiag, unix.Errno(-e))
					}
				}
				return nil
			case unix.SOCK_DIAG_BY_FAMILY:
				if l >= nlmsgHdrLen+inetDiagMsgLen {
					m := b[nlmsgHdrLen:]
					if m[1] == tcpListenState {
						port := binary.BigEndian.Uint16(m[4:])
						fn(port, ne.Uint32(m[56:]), ne.Uint32(m[60:]))
					}
				}
			}
			b = b[(l+3)&^3:]
		}
	}
}
