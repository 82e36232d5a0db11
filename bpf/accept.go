package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// ListenQueue is one listening TCP socket's accept queue.
type ListenQueue struct {
	Port       uint16 // local port
	Family     uint16 // AF_INET or AF_INET6
	Backlog    uint32 // connections waiting for accept (sk_ack_backlog)
	MaxBacklog uint32 // listen() backlog after the somaxconn cap (sk_max_ack_backlog)
}

// acceptRecordSize is sizeof(struct accept_record) in accept.bpf.c.
const acceptRecordSize = 16

// maxAcceptRead bounds one iterator read, so a host with a huge socket
// table cannot make a read allocate without limit (4096 listeners).
const maxAcceptRead = 4096 * acceptRecordSize

// ErrTooManyListeners is returned when the iterator yields more watched
// listeners than one read holds.
var ErrTooManyListeners = errors.New("too many listening sockets in one read")

// Accept reads the accept queues of watched listening sockets with an
// iter/tcp program walking the socket table on each Read.
type Accept struct {
	coll  *ebpf.Collection
	iter  *link.Iter
	ports map[uint16]bool
	all   bool
	buf   []byte
}

// AcceptOptions configure OpenAccept. There is nothing to choose yet (the
// iterator has one tier); the struct keeps every loader's shape the same.
type AcceptOptions struct{}

// OpenAccept loads and attaches the iterator.
func OpenAccept(AcceptOptions) (*Accept, error) {
	removeMemlock()
	spec, err := loadAccept()
	if err != nil {
		return nil, fmt.Errorf("loading accept spec: %w", err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("loading iter/tcp program: %w", err)
	}
	it, err := link.AttachIter(link.IterOptions{Program: coll.Programs["accept_iter"]})
	if err != nil {
		coll.Close()
		return nil, fmt.Errorf("attaching iter/tcp: %w", err)
	}
	return &Accept{coll: coll, iter: it, ports: map[uint16]bool{}, buf: make([]byte, 0, 64*acceptRecordSize)}, nil
}

// Tier is always TierIter.
func (a *Accept) Tier() Tier { return TierIter }

// WatchPort adds a local port to the watched set.
func (a *Accept) WatchPort(port uint16) error {
	if err := a.coll.Maps["accept_ports"].Put(port, uint8(1)); err != nil {
		return fmt.Errorf("watching port %d: %w", port, err)
	}
	a.ports[port] = true
	return nil
}

// UnwatchPort removes a port.
func (a *Accept) UnwatchPort(port uint16) error {
	if !a.ports[port] {
		return nil
	}
	delete(a.ports, port)
	if err := a.coll.Maps["accept_ports"].Delete(port); err != nil {
		return fmt.Errorf("unwatching port %d: %w", port, err)
	}
	return nil
}

// WatchAll reports every listening socket, watched or not.
func (a *Accept) WatchAll(on bool) error {
	a.all = on
	var f uint32
	if on {
		f = flagWatchAll
	}
	return setConfigFlags(a.coll.Maps["accept_config"], f)
}

// Read walks the socket table once and appends the watched listeners to
// dst[:0]. It reuses its read buffer between calls.
func (a *Accept) Read(dst []ListenQueue) ([]ListenQueue, error) {
	dst = dst[:0]
	rc, err := a.iter.Open()
	if err != nil {
		return dst, fmt.Errorf("opening tcp iterator: %w", err)
	}
	defer rc.Close()
	a.buf = a.buf[:0]
	for {
		if len(a.buf) == cap(a.buf) {
			if cap(a.buf) >= maxAcceptRead {
				return dst, ErrTooManyListeners
			}
			nb := make([]byte, len(a.buf), 2*cap(a.buf))
			copy(nb, a.buf)
			a.buf = nb
		}
		n, err := rc.Read(a.buf[len(a.buf):cap(a.buf)])
		a.buf = a.buf[:len(a.buf)+n]
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			break
		}
		if err != nil {
			return dst, fmt.Errorf("reading tcp iterator: %w", err)
		}
	}
	for off := 0; off+acceptRecordSize <= len(a.buf); off += acceptRecordSize {
		r := a.buf[off:]
		dst = append(dst, ListenQueue{
			Port:       binary.LittleEndian.Uint16(r[0:]),
			Family:     binary.LittleEndian.Uint16(r[2:]),
			Backlog:    binary.LittleEndian.Uint32(r[4:]),
			MaxBacklog: binary.LittleEndian.Uint32(r[8:]),
		})
	}
	return dst, nil
}

// Stats reports the iterator program's kernel run-time accounting.
func (a *Accept) Stats() ([]ProgramStats, error) {
	s, err := programStats(acceptProgAcceptIter, a.coll.Programs[acceptProgAcceptIter])
	if err != nil {
		return nil, err
	}
	return []ProgramStats{s}, nil
}

// Close detaches and unloads.
func (a *Accept) Close() error {
	if a.iter == nil {
		return nil
	}
	err := a.iter.Close()
	a.coll.Close()
	a.iter = nil
	return err
}
