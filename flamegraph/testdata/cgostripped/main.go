// A cgo program that the tests build stripped (-ldflags "-s -w"), as Go
// services are often shipped: no .symtab, but a .dynsym that exports cgo's
// own C functions (crosscall2, _cgo_panic).
package main

// int twice(int x) { return 2 * x; }
import "C"

import "fmt"

//go:noinline
func goFunction() int { return int(C.twice(21)) }

func main() { fmt.Println(goFunction()) }
