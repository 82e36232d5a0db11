package flamegraph

import (
	"regexp"
	"strings"
)

// containerIDPattern finds a 64-hex container id in a cgroup path, as
// docker ("/docker/<id>", "docker-<id>.scope"), containerd
// ("cri-containerd-<id>.scope", "/kubepods/.../<id>") and cri-o
// ("crio-<id>.scope") write them.
var containerIDPattern = regexp.MustCompile(`(?:^|[/-])([0-9a-f]{64})(?:\.scope)?(?:/|$)`)

// ParseCgroupFile reads /proc/PID/cgroup content and returns the unified
// hierarchy's path (else the first line's) and the container id found in any
// line ("" when none).
func ParseCgroupFile(content string) (path, container string) {
	for _, line := range strings.Split(strings.TrimSpace(content), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			path = parts[2]
		} else if path == "" {
			path = parts[2]
		}
		if container == "" {
			container = ContainerID(parts[2])
		}
	}
	return path, container
}

// ContainerID extracts a container id from one cgroup path.
func ContainerID(cgroupPath string) string {
	if m := containerIDPattern.FindStringSubmatch(cgroupPath); m != nil {
		return m[1]
	}
	return ""
}
