// Code generation for the BPF objects. Run `make generate` (needs clang-16).
// Each X.bpf.c is loaded by X.go; bpf2go writes X_bpfel.go and X_bpfel.o.
package bpf

//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf profiler profiler.bpf.c -- -I./headers
//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf -output-stem profiler_offcpu profilerOffcpu profiler_offcpu.bpf.c -- -I./headers
//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf runqlat runqlat.bpf.c -- -I./headers
//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf accept accept.bpf.c -- -I./headers
//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf blkio blkio.bpf.c -- -I./headers
//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf syscalls syscalls.bpf.c -- -I./headers
//go:generate go tool bpf2go -cc clang-16 -cflags "-O2 -g -Wall" -target bpfel -go-package bpf tcpstat tcpstat.bpf.c -- -I./headers
