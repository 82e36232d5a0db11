package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// profilerCountMaps are the maps both samplers count into.
type profilerCountMaps struct {
	ProfileControl *ebpf.Map `ebpf:"profile_control"`
	ProfileCounts0 *ebpf.Map `ebpf:"profile_counts0"`
	ProfileCounts1 *ebpf.Map `ebpf:"profile_counts1"`
	ProfileLost    *ebpf.Map `ebpf:"profile_lost"`
	ProfileStacks  *ebpf.Map `ebpf:"profile_stacks"`
}

func (m *profilerCountMaps) Close() error {
	return errors.Join(m.ProfileControl.Close(), m.ProfileCounts0.Close(), m.ProfileCounts1.Close(), m.ProfileLost.Close(), m.ProfileStacks.Close())
}

// profilerFPObjects is frame-pointer mode: the counting sampler alone, so
// that the copy mode's maps (a ring buffer of megabytes) are not created.
type profilerFPObjects struct {
	profilerCountMaps
	ProfileSample *ebpf.Program `ebpf:"profile_sample"`
}

// profilerCopyObjects is copy mode: the copying sampler, which still counts
// the samples of frame-pointer-sound processes (and those that find the
// ring buffer full).
type profilerCopyObjects struct {
	profilerCountMaps
	ProfileCopies       *ebpf.Map     `ebpf:"profile_copies"`
	ProfileCopyScratch  *ebpf.Map     `ebpf:"profile_copy_scratch"`
	ProfileFpPids       *ebpf.Map     `ebpf:"profile_fp_pids"`
	ProfileCopyFallback *ebpf.Map     `ebpf:"profile_copy_fallback"`
	ProfileSampleCopy   *ebpf.Program `ebpf:"profile_sample_copy"`
}

func (o *profilerCopyObjects) Close() error {
	return errors.Join(o.ProfileSampleCopy.Close(), o.ProfileCopies.Close(), o.ProfileCopyScratch.Close(),
		o.ProfileFpPids.Close(), o.ProfileCopyFallback.Close(), o.profilerCountMaps.Close())
}

func (p *Profiler) loadCopy(spec *ebpf.CollectionSpec) error {
	o := p.opts
	if o.StackCopyBytes > MaxStackCopyBytes {
		return fmt.Errorf("%w: StackCopyBytes %d over %d", ErrBadCopyOption, o.StackCopyBytes, MaxStackCopyBytes)
	}
	if o.CopyRingBytes < uint32(os.Getpagesize()) || o.CopyRingBytes&(o.CopyRingBytes-1) != 0 {
		return fmt.Errorf("%w: CopyRingBytes %d is not a power of two of at least a page", ErrBadCopyOption, o.CopyRingBytes)
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("counting possible CPUs: %w", err)
	}
	spec.Maps[profilerMapProfileCopies].MaxEntries = o.CopyRingBytes
	spec.Maps[profilerMapProfileCopyScratch].MaxEntries = uint32(cpus)
	spec.Maps[profilerMapProfileFpPids].MaxEntries = o.FramePointerProcesses
	objs := &profilerCopyObjects{}
	if err := spec.LoadAndAssign(objs, nil); err != nil {
		return fmt.Errorf("loading the stack-copy sampler: %w", err)
	}
	rd, err := ringbuf.NewReader(objs.ProfileCopies)
	if err != nil {
		objs.Close()
		return fmt.Errorf("reading the stack-copy ring buffer: %w", err)
	}
	ready, err := pollableRing(objs.ProfileCopies)
	if err != nil {
		rd.Close()
		objs.Close()
		return err
	}
	p.copyObjs, p.on, p.sampler = objs, &objs.profilerCountMaps, objs.ProfileSampleCopy
	p.copies = &CopyReader{rd: rd, ready: ready}
	return nil
}

// pollableRing is a second descriptor of the ring buffer map, registered
// with Go's network poller, for CopyReader.Wait. The ring reader's own
// Read waits in epoll_wait: a system call, which with the agent's one P
// keeps that P until the runtime's monitor takes it back (20 µs to 10 ms
// later, docs/footprint-history.md "The runtime's monitor, kept awake"). A
// goroutine waiting in the network poller holds neither a P nor a thread.
func pollableRing(m *ebpf.Map) (*os.File, error) {
	fd, err := unix.FcntlInt(uintptr(m.FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicating the stack-copy ring buffer's descriptor: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("making the stack-copy ring buffer's descriptor non-blocking: %w", err)
	}
	// os.NewFile registers a non-blocking descriptor with the poller
	// (epoll, edge-triggered); the ring signals readiness as for a reader
	// in epoll_wait. Where the registration fails the file takes no
	// deadline: then nil, and the reader blocks in the ring's own wait.
	f := os.NewFile(uintptr(fd), "profile_copies")
	if f.SetReadDeadline(time.Time{}) != nil {
		f.Close()
		return nil, nil
	}
	return f, nil
}

// StackCopy is one copy-mode sample: a thread's user registers, the top of
// its user stack, and the kernel's own walks of its kernel stack and (by
// frame pointer) of its user stack. Slices are reused by the next Read.
type StackCopy struct {
	Pid      uint32 // thread id
	Tgid     uint32 // process id
	CgroupID uint64
	Comm     string
	// StartNs identifies the process with Tgid (the kernel's start time of
	// its leader), for SetFramePointerSound.
	StartNs    uint64
	IP, SP, BP uint64
	// Stack holds the user stack from SP upward (possibly shorter than
	// StackCopyBytes: the copy stops at the stack's top).
	Stack  []byte
	Kernel []uint64
	UserFP []uint64
	// KernelErr, UserFPErr: negative errno when that walk failed (-14
	// EFAULT: no kernel stack for a sample taken in user mode), else 0.
	KernelErr, UserFPErr int32
}

// CopyReader reads copy-mode samples from the ring buffer.
type CopyReader struct {
	rd    *ringbuf.Reader
	ready *os.File // the ring's descriptor in Go's network poller (Wait); nil where it cannot be
	rec   ringbuf.Record
}

// CopyReader returns the reader of copy-mode samples (one per profiler);
// ErrNoCopies when the profiler was opened without CopyUserStacks.
func (p *Profiler) CopyReader() (*CopyReader, error) {
	if p.copies == nil {
		return nil, ErrNoCopies
	}
	return p.copies, nil
}

// CopiesUserStacks reports whether the copy-mode sampler is attached.
func (p *Profiler) CopiesUserStacks() bool { return p.copies != nil }

// Layout of struct profiler_copy (profiler_copy.h), from the generated type.
var (
	copyStackOff  = int(unsafe.Offsetof(profilerProfilerCopy{}.Stack))
	copyKernelOff = int(unsafe.Offsetof(profilerProfilerCopy{}.Kernel))
	copyUserFPOff = int(unsafe.Offsetof(profilerProfilerCopy{}.UserFp))
	copyCommOff   = int(unsafe.Offsetof(profilerProfilerCopy{}.Comm))
)

// errBadCopyRecord means a ring buffer record is shorter than its header
// says (it never is unless the object and this reader disagree).
var errBadCopyRecord = errors.New("malformed stack copy record")

// Read blocks until a sample arrives (or the deadline passes:
// os.ErrDeadlineExceeded), and fills c. After the profiler is closed it
// returns ErrProfilerShut.
func (r *CopyReader) Read(c *StackCopy) error {
	if err := r.rd.ReadInto(&r.rec); err != nil {
		if errors.Is(err, ringbuf.ErrClosed) {
			return ErrProfilerShut
		}
		return err
	}
	b := r.rec.RawSample
	if len(b) < copyStackOff {
		return fmt.Errorf("%w: %d bytes", errBadCopyRecord, len(b))
	}
	le := binary.LittleEndian
	c.Pid, c.Tgid, c.CgroupID = le.Uint32(b[0:]), le.Uint32(b[4:]), le.Uint64(b[8:])
	c.StartNs, c.IP, c.SP, c.BP = le.Uint64(b[16:]), le.Uint64(b[24:]), le.Uint64(b[32:]), le.Uint64(b[40:])
	stackLen := int(le.Uint32(b[48:]))
	kernelLen, userFPLen := int32(le.Uint32(b[52:])), int32(le.Uint32(b[56:]))
	comm := b[copyCommOff : copyCommOff+16]
	n := 0
	for n < len(comm) && comm[n] != 0 {
		n++
	}
	if c.Comm != string(comm[:n]) {
		c.Comm = string(comm[:n])
	}
	if stackLen > len(b)-copyStackOff {
		return fmt.Errorf("%w: %d stack bytes in a %d-byte record", errBadCopyRecord, stackLen, len(b))
	}
	c.Stack = append(c.Stack[:0], b[copyStackOff:copyStackOff+stackLen]...)
	c.Kernel, c.KernelErr = stackWords(c.Kernel, b[copyKernelOff:copyUserFPOff], kernelLen)
	c.UserFP, c.UserFPErr = stackWords(c.UserFP, b[copyUserFPOff:copyStackOff], userFPLen)
	return nil
}

// stackWords decodes a bpf_get_stack result: n bytes of addresses, or a
// negative errno.
func stackWords(dst []uint64, b []byte, n int32) ([]uint64, int32) {
	dst = dst[:0]
	if n < 0 {
		return dst, n
	}
	if int(n) > len(b) {
		n = int32(len(b))
	}
	for i := 0; i+8 <= int(n); i += 8 {
		pc := binary.LittleEndian.Uint64(b[i:])
		if pc == 0 {
			break
		}
		dst = append(dst, pc)
	}
	return dst, 0
}

// Pending is the number of bytes of records in the ring buffer not read
// yet.
func (r *CopyReader) Pending() int { return r.rd.AvailableBytes() }

// Wait blocks until the ring buffer holds a record (Pending > 0), parked in
// Go's network poller rather than in a system call, so that it holds no P
// while it waits. After the profiler is closed it returns ErrProfilerShut.
// A reader that drains with ReadNow after each Wait never blocks in a
// system call.
func (r *CopyReader) Wait() error {
	if r.ready == nil {
		return nil // ReadNow blocks instead
	}
	rc, err := r.ready.SyscallConn()
	if err == nil {
		err = rc.Read(func(uintptr) bool { return r.rd.AvailableBytes() > 0 })
	}
	if err != nil {
		// With no deadline set, the poller's wait fails only once the
		// descriptor is closed ("use of closed file", which is not
		// os.ErrClosed), that is, once the profiler is.
		return fmt.Errorf("%w: %v", ErrProfilerShut, err)
	}
	return nil
}

// ReadNow is Read without waiting: os.ErrDeadlineExceeded when the ring
// holds no record. It makes one non-blocking epoll_wait when the reader
// has seen the ring empty, and none while records follow each other.
// Where the ring could not join the network poller (Wait returns at once)
// it blocks until a record comes, as Read does.
func (r *CopyReader) ReadNow(c *StackCopy) error {
	if r.ready == nil {
		r.rd.SetDeadline(time.Time{})
	} else {
		r.rd.SetDeadline(pastDeadline)
	}
	return r.Read(c)
}

// pastDeadline makes the ring reader's wait return at once.
var pastDeadline = time.Unix(1, 0)

// SetDeadline makes a blocked Read return os.ErrDeadlineExceeded at t.
func (r *CopyReader) SetDeadline(t time.Time) { r.rd.SetDeadline(t) }

// SetFramePointerSound marks a process (tgid and StartNs, from one of its
// samples) as keeping frame pointers in all its code: its samples are then
// counted by the kernel's frame-pointer walk, without a copy.
func (p *Profiler) SetFramePointerSound(tgid uint32, startNs uint64) error {
	if p.copyObjs == nil {
		return ErrNoCopies
	}
	if err := p.copyObjs.ProfileFpPids.Put(tgid, startNs); err != nil {
		return fmt.Errorf("marking process %d frame-pointer sound: %w", tgid, err)
	}
	return nil
}
