// Package buildinfo is what the binary knows about its own build: the
// version (set at link time, else the module version Go recorded), the VCS
// revision and the Go version. `triage version` prints it and the agent
// exports it as the triage_build_info metric.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// version is set at link time:
//
//	go build -ldflags "-X github.com/triage-agent/triage/internal/buildinfo.version=0.2.0" ./cmd/triage
var version string

// Info describes this build.
type Info struct {
	Version   string `json:"version"`   // release version, or the module version, or "devel"
	Revision  string `json:"revision"`  // VCS commit, "" when not recorded (-buildvcs=false)
	Modified  bool   `json:"modified"`  // built from a work tree with uncommitted changes
	GoVersion string `json:"goversion"` // the toolchain that built it
}

// Read returns this build's Info.
func Read() Info {
	info := Info{Version: version, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	return info
}
