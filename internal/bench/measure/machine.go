package measure

import (
	"os"
	"strings"
)

// CPUModel is the "model name" of the first CPU in /proc/cpuinfo, "" where
// there is none (arm64 kernels do not print it).
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "model name") {
			if _, v, ok := strings.Cut(line, ":"); ok {
				return strings.TrimSpace(v)
			}
			return ""
		}
	}
	return ""
}
