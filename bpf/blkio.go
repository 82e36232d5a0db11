package bpf

import "fmt"

// BlkioOptions configure OpenBlkio; the zero value means auto tier.
type BlkioOptions struct {
	Tier Tier
}

var blkioHooks = []hook{
	{group: "block", name: "block_rq_issue", btf: "blkio_btf_issue", raw: "blkio_raw_issue", tp: "blkio_tp_issue"},
	{group: "block", name: "block_rq_complete", btf: "blkio_btf_complete", raw: "blkio_raw_complete", tp: "blkio_tp_complete"},
}

// Dev is a kernel dev_t as the block tracepoints report it (major<<20 | minor).
type Dev uint32

// Major and Minor split the device number.
func (d Dev) Major() uint32  { return uint32(d) >> 20 }
func (d Dev) Minor() uint32  { return uint32(d) & (1<<20 - 1) }
func (d Dev) String() string { return fmt.Sprintf("%d:%d", d.Major(), d.Minor()) }

// Blkio measures block request latency (issue to complete) per device.
type Blkio struct {
	*probe
	reader *percpuHist
}

// OpenBlkio loads and attaches the block I/O programs.
func OpenBlkio(opts BlkioOptions) (*Blkio, error) {
	p, rd, err := openHistProbe("blkio", loadBlkio, blkioHooks, opts.Tier)
	if err != nil {
		return nil, err
	}
	return &Blkio{probe: p, reader: rd}, nil
}

// ReadDevices calls fn with each device's cumulative histogram. The
// histogram is only valid during the call.
func (b *Blkio) ReadDevices(fn func(dev Dev, h *Hist)) error {
	var (
		key uint32
		sum Hist
	)
	it := b.mapNamed("blkio_dev_hist").Iterate()
	for it.Next(&key, &b.reader.buf) {
		b.reader.sum(&sum)
		fn(Dev(key), &sum)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("reading block I/O histograms: %w", err)
	}
	return nil
}
