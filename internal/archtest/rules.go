package archtest

// Module is the import path of the module whose packages the rules govern.
const Module = "github.com/triage-agent/triage"

// DesignRules is DESIGN.md's folder table ("may import") and the sentences
// under it, as rules over the module's production packages.
func DesignRules() []Rule {
	in := func(folder string) string { return Module + "/" + folder }
	return []Rule{
		Never{To: in("cmd"), Except: []string{in("cmd")},
			Design: "nothing imports cmd"},
		Never{To: in("agent"), Except: []string{in("cmd"), in("internal/bench")},
			Design: "only cmd and internal/bench import agent (so codec, flamegraph and bpf never do)"},
		Never{From: []string{in("agent")}, To: in("train"),
			Design: "agent imports everything above it but train"},
		Never{From: []string{in("agent")}, To: in("client"),
			Design: "agent does not import client (client is the library of the agent's peers)"},

		Only{Pkg: in("bpf"), Allow: []string{"github.com/cilium/ebpf", "golang.org/x/sys"},
			Design: "bpf imports cilium/ebpf only (and x/sys, which cilium/ebpf is built on)"},
		Only{Pkg: in("codec"), Allow: []string{"github.com/cespare/xxhash/v2", "github.com/klauspost/compress/zstd"},
			Design: "codec imports xxhash and zstd only"},
		Only{Pkg: in("wire"), Allow: []string{in("codec"), "google.golang.org/protobuf"},
			Design: "wire imports codec only (and the protobuf runtime its generated code needs)"},
		// An ONNX file is a protobuf message: the ONNX writer encodes it with
		// protowire, the wire format alone, not a schema or a runtime.
		Only{Pkg: in("policy"), Allow: []string{"github.com/yalue/onnxruntime_go", "google.golang.org/protobuf/encoding/protowire"},
			Design: "policy imports onnxruntime_go only (and protowire for the ONNX writer)"},
		// experience/ (the log of decisions and outcomes that training reads)
		// sits between policy and train in DESIGN's data flow.
		Only{Pkg: in("experience"), Allow: []string{in("policy")},
			Design: "experience imports policy only"},
		Only{Pkg: in("train"), Allow: []string{in("policy"), in("experience")},
			Design: "train imports policy (and the experience log it replays) only"},
		// The demangler is the one google/pprof itself uses (it was in the
		// module graph through pprof); flamegraph names C++ and Rust frames
		// with it.
		Only{Pkg: in("flamegraph"), Allow: []string{"github.com/google/pprof", "github.com/ianlancetaylor/demangle"},
			Design: "flamegraph imports google/pprof only (and ianlancetaylor/demangle, pprof's own demangler)"},
		Only{Pkg: in("client"), Allow: []string{in("wire"), in("codec"), "github.com/quic-go/quic-go", "golang.org/x"},
			Design: "client imports wire, codec and quic-go only (and golang.org/x)"},
		Only{Pkg: in("deploy"), Allow: nil,
			Design: "deploy holds manifests, no Go code that imports anything"},
	}
}
