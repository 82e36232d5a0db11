// Code generation for the BPF objects. Run `make generate` (needs clang-16).
package bpf

//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf profile profile.bpf.c -- -I./headers
//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf offcpu offcpu.bpf.c -- -I./headers
//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf runqlat runqlat.bpf.c -- -I./headers
//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf accept accept.bpf.c -- -I./headers
//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf blkio blkio.bpf.c -- -I./headers
//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf syscalls syscall.bpf.c -- -I./headers
//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf tcpstat tcp.bpf.c -- -I./headers
