# triage — the two commands a newcomer needs are `make run` and `make test`.
# Every setup step they depend on is a target here, idempotent and cached.

GO        ?= go
BIN       := bin/triage
# VERSION is what `triage version` and triage_build_info report.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
ORT_LIB    = $(shell ./scripts/fetch-onnxruntime.sh)
export TRIAGE_ONNXRUNTIME_LIB ?= $(ORT_LIB)
TEST_FLAGS ?= -count=1 -timeout 40m -p 2
# Tests that measure real latency (a p99 under a fault, tasks slowed by a
# played neighbour) run after the rest, alone on the machine: beside another
# package's tests they measure that package (CI once saw a 10 ms task take
# 40 ms before the neighbour started; the soak's deciders, asked 800 tasks
# a second, offered 563 under a load average of 10; a short real overload
# run deciding over QUIC once saw a decide p99 of 2.7 s and lost to FIFO).
# ALONE_PKGS are the packages holding them.
ALONE_TESTS := TestFaultConnectionFloodFromOneAddress|TestInterferenceIsPlayedForRealAndCleanedUp|TestDecidersOfferTheRateWhateverTheRoundTrip|TestDecidersCountWhatTheyCannotSend|TestRunFIFOAndPriorities
ALONE_PKGS  := ./agent ./internal/bench/e2e ./internal/bench/soak
# PKGS narrows vet and lint to a package list: make lint PKGS='./codec/... ./wire'
PKGS      ?= ./...

.PHONY: all run test check build deps ort generate check-generated bench model model-candidate fuzz vet lint fmt fmt-fix clean

all: build

## deps: Debian packages for regenerating BPF objects and for the tests' real peers
deps:
	./scripts/install-build-deps.sh

## ort: fetch and verify the ONNX Runtime shared library into the cache
ort:
	@./scripts/fetch-onnxruntime.sh

build:
	$(GO) build -ldflags "-X github.com/triage-agent/triage/internal/buildinfo.version=$(VERSION)" -o $(BIN) ./cmd/triage

## run: set up and start the agent with its embedded defaults
run: build
	./scripts/fetch-onnxruntime.sh >/dev/null
	./$(BIN) agent

## test: set up, run the checks, then every test (as root, the eBPF tests load and attach for real)
test: deps check
	./scripts/fetch-onnxruntime.sh >/dev/null
	$(GO) test $(TEST_FLAGS) -skip '^($(ALONE_TESTS))$$' ./...
	$(GO) test $(TEST_FLAGS) -p 1 -run '^($(ALONE_TESTS))$$' $(ALONE_PKGS)

## check: formatting, vet, staticcheck, and generated code matching its sources
check: fmt vet lint check-generated

## generate: rebuild the committed BPF objects and wire/triage.pb.go (needs clang-16 and protoc, see deps)
generate: deps
	$(GO) generate ./bpf/... ./wire

## check-generated: regenerate in a temporary copy and fail on any file that differs
check-generated: deps
	./scripts/check-generated.sh

## bench: the Go benchmarks of every package, side by side in one run
bench:
	./scripts/fetch-onnxruntime.sh >/dev/null
	$(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: every fuzz target for FUZZTIME each (default 1m; make fuzz FUZZTIME=3m); a failing
## input lands in the package's testdata/fuzz/, which go test (and make test) then runs
## with the committed corpus and the seeds. FUZZSAVE=1 also keeps inputs the run found
## interesting as corpus. Knobs: scripts/fuzz.sh.
fuzz:
	./scripts/fetch-onnxruntime.sh >/dev/null
	./scripts/fuzz.sh

## model: rebuild the embedded default model, bit for bit, with the trainer of the commit that built it (policy/defaultmodel/provenance.txt)
model:
	./scripts/train-default-model.sh

## model-candidate: train this tree's recipe into out/model-candidate/ (fixed seed; the embedded model is left alone)
model-candidate: build
	./scripts/fetch-onnxruntime.sh >/dev/null
	./scripts/train-candidate-model.sh

vet:
	$(GO) vet $(PKGS)

## lint: staticcheck (pinned in go.mod) with its default checks, which include unused (U1000)
lint:
	$(GO) tool staticcheck $(PKGS)

## fmt: list the Go files gofmt would change and fail if there are any (fmt-fix rewrites them)
fmt:
	@files=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')) || exit 1; \
	if [ -n "$$files" ]; then echo "gofmt: these files need formatting (make fmt-fix):"; echo "$$files"; exit 1; fi

fmt-fix:
	gofmt -l -w $$(git ls-files --cached --others --exclude-standard '*.go')

clean:
	rm -rf bin
