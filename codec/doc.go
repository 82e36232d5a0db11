// Package codec is triage's delta codec: each payload (a node-state snapshot,
// a decide batch) travels as one frame that is either a full zstd frame (F) or
// a zstd frame that uses an earlier payload as a raw dictionary (D, the
// "patch-from" trick), so consecutive snapshots of slowly changing counters
// cost a few hundred bytes instead of kilobytes.
//
// Frame layout (all integers little endian, see docs/codec.md):
//
//	kind        1 byte   'F' or 'D'
//	base hash   8 bytes  xxhash64 of the base payload (0 for F)
//	payload     8 bytes  xxhash64 of the decoded payload
//	length      uvarint  decoded payload length
//	body length uvarint  number of body bytes that follow
//	body                 zstd frame (no zstd checksum: the payload hash is the check)
//
// The package is pure: no I/O, no goroutines. Encoder and Decoder are safe for
// concurrent use (a datagram sender encodes while its receiver calls Ack).
package codec
