package flamegraph

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// demangleName turns an Itanium C++ or Rust (legacy and v0) symbol into
// the name a developer wrote, without parameter types (flame graph frames
// are read at a glance; templates stay, since ns::work<3> and ns::work<4>
// are different code) and without the clone suffixes GCC adds (.isra.0,
// .cold), so a function's parts share one frame. Anything else, C and Go
// names included, comes back unchanged.
func demangleName(name string) string {
	if !strings.HasPrefix(name, "_Z") && !strings.HasPrefix(name, "_R") && !strings.HasPrefix(name, "__Z") {
		return name
	}
	return demangle.Filter(name, demangle.NoParams)
}
