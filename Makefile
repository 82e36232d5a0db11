# triage — the two commands a newcomer needs are `make run` and `make test`.
# Every setup step they depend on is a target here, idempotent and cached.

GO        ?= go
BIN       := bin/triage
ORT_LIB    = $(shell ./scripts/fetch-onnxruntime.sh)
export TRIAGE_ONNXRUNTIME_LIB ?= $(ORT_LIB)
TEST_FLAGS ?= -count=1 -timeout 40m -p 2

.PHONY: all run test build deps ort generate bench model vet fmt clean

all: build

## deps: Debian packages for regenerating BPF objects and for the tests' real peers
deps:
	./scripts/install-build-deps.sh

## ort: fetch and verify the ONNX Runtime shared library into the cache
ort:
	@./scripts/fetch-onnxruntime.sh

build:
	$(GO) build -o $(BIN) ./cmd/triage

## run: set up and start the agent with its embedded defaults
run: build
	./scripts/fetch-onnxruntime.sh >/dev/null
	./$(BIN) agent

## test: set up and run every test (as root, the eBPF tests load and attach for real)
test: deps
	./scripts/fetch-onnxruntime.sh >/dev/null
	$(GO) vet ./...
	$(GO) test $(TEST_FLAGS) ./...

## generate: rebuild the committed BPF objects (needs clang-16, see deps)
generate: deps
	$(GO) generate ./bpf/...

## bench: the Go benchmarks of every package, side by side in one run
bench:
	./scripts/fetch-onnxruntime.sh >/dev/null
	$(GO) test -run '^$$' -bench . -benchmem ./...

## model: retrain the embedded default model from the project's scenarios (fixed seed)
model: build
	./scripts/fetch-onnxruntime.sh >/dev/null
	./scripts/train-default-model.sh

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w $$(git ls-files '*.go')

clean:
	rm -rf bin
