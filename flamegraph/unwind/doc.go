// Package unwind walks native user stacks without frame pointers: it turns
// an ELF file's call frame information (.eh_frame, located directly or
// through .eh_frame_hdr, and .debug_frame) into a compact table of unwind
// rows, and unwinds a copied user stack (registers plus the top bytes of the
// stack, as the sampler copies them) with that table, stepping by frame
// pointer through code no table covers (JIT code, binaries whose tables
// could not be read).
//
// It reads files of other tenants' processes as root, so every parser is
// bounded (no allocation larger than its input or a stated cap) and returns
// an error, never panics, on malformed input; each has a fuzz target.
//
// x86-64 only: the register numbers and the return-address rule are those
// of the System V x86-64 ABI.
package unwind
