// Code generation for the BPF objects. Run `make generate` (needs clang-16).
package bpf

