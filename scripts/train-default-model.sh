#!/usr/bin/env bash
# Retrains the embedded default model from the project's own scenarios
# (testdata/scenarios/, never the shared held-out ones) with a fixed seed,
# and writes policy/defaultmodel/model.onnx plus its report under
# docs/training-report/. Run by `make model`; about 5 minutes on 2 idle
# cores (7 when they are shared).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${BIN:-bin/triage}"
# Always rebuild (incremental, seconds): a stale binary would train with
# an older trainer and silently give another model.
go build -o "$BIN" ./cmd/triage
SEED="${TRIAGE_MODEL_SEED:-7}"
EPISODES="${TRIAGE_MODEL_EPISODES:-32}"
ENSEMBLE="${TRIAGE_MODEL_ENSEMBLE:-5}"
# Weight of the blocking price (train/blame.go): what teaches the network
# which tasks belong in the background tier.
BLAME="${TRIAGE_MODEL_BLAME:-6}"
# Per-episode probability that each kernel-signal source is absent, so the
# network does not lean on one a real node may not have.
MISSING="${TRIAGE_MODEL_MISSING_SOURCES:-0.5}"
"$BIN" train \
  --scenario "$(ls testdata/scenarios/*.json | paste -sd, -)" \
  --seed "$SEED" --episodes "$EPISODES" --ensemble "$ENSEMBLE" --blame-weight "$BLAME" \
  --missing-sources "$MISSING" \
  --version "default-s${SEED}-e${EPISODES}x${ENSEMBLE}-b${BLAME}-m${MISSING}" \
  --out policy/defaultmodel/model.onnx \
  --report docs/training-report
