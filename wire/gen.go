package wire

// protoc-gen-go is the module's pinned tool (go.mod), so regenerating needs
// only protoc on PATH (Debian's protobuf-compiler, from `make deps`) and
// gives the same triage.pb.go on every machine.
//go:generate sh -c "protoc --plugin=protoc-gen-go=\"$(go tool -n protoc-gen-go)\" --proto_path=proto --go_out=. --go_opt=paths=source_relative triage.proto"
