package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/triage-agent/triage/internal/buildinfo"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

func init() {
	register("version", "print the version, its build (Go, ONNX Runtime) and the schemas it speaks", runVersion)
}

// versionInfo is what `triage version --json` prints.
type versionInfo struct {
	buildinfo.Info
	ONNXRuntime     string `json:"onnxruntime"`                 // version of the library loaded, "" when none loads
	ONNXRuntimePath string `json:"onnxruntime_path,omitempty"`  // where it was loaded from
	ONNXRuntimeErr  string `json:"onnxruntime_error,omitempty"` // why none loads
	ONNXTested      string `json:"onnxruntime_tested"`          // the release this build is tested with
	StateSchema     string `json:"state_schema"`                // the state vector the models must match
	Protocol        string `json:"protocol"`                    // the native protocol's ALPN
	WireSchema      string `json:"wire_schema"`                 // the protobuf package
}

func runVersion(args []string) error {
	fs := newFlagSet("version", "print the version, the VCS revision, the Go and ONNX Runtime versions and the schemas")
	asJSON := fs.Bool("json", false, "print one JSON object")
	ortLib := fs.String("onnxruntime-lib", "", "ONNX Runtime library to load (default: $TRIAGE_ONNXRUNTIME_LIB, the cache, the loader path)")
	if err := parseFlags(fs, args); err != nil {
		return helpIsNotAnError(err)
	}
	v := versionInfo{Info: buildinfo.Read(), ONNXTested: policy.ORTVersion, StateSchema: policy.StateSchema,
		Protocol: wire.ALPNNative, WireSchema: "triage.wire.v1"}
	if ver, path, err := policy.LoadRuntime(*ortLib); err == nil {
		v.ONNXRuntime, v.ONNXRuntimePath = ver, path
	} else {
		v.ONNXRuntimeErr = err.Error()
	}
	return printVersion(os.Stdout, v, *asJSON)
}

func printVersion(w io.Writer, v versionInfo, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(v)
	}
	rev := v.Revision
	if rev == "" {
		rev = "unknown"
	}
	if v.Modified {
		rev += " (modified)"
	}
	ort := v.ONNXRuntime + " (" + v.ONNXRuntimePath + ")"
	if v.ONNXRuntime == "" {
		ort = "not loaded: " + v.ONNXRuntimeErr
	}
	_, err := fmt.Fprintf(w, "triage %s\nrevision     %s\ngo           %s\nonnxruntime  %s; tested with %s\nstate schema %s\nprotocol     %s, %s (protobuf)\n",
		v.Version, rev, v.GoVersion, ort, v.ONNXTested, v.StateSchema, v.Protocol, v.WireSchema)
	return err
}
