// Package archtest checks the import rules of DESIGN.md's folder table
// against the real package graph (`go list -deps -json`), so a forbidden
// import fails `go test ./...` instead of waiting for a reviewer.
//
// The rules (rules.go) are about production code: test files are left out,
// because a test may drive the real peer of its package (agent/serve's tests
// dial it with client) without the binary depending on that peer.
//
// Third-party code, golang.org/x included, is not the standard library: a
// package may import it only where its rule names it. golang.org/x/sys is
// named for bpf (cilium/ebpf is built on it) and every golang.org/x module
// for client (quic-go's TLS and networking come from x/crypto and x/net).
// What an allowed library imports in turn is that library's business and is
// not checked.
package archtest
