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
"$BIN" train \
  --scenario "$(ls testdata/scenarios/*.json | paste -sd, -)" \
  --seed "$SEED" --episodes "$EPISODES" --ensemble "$ENSEMBLE" \
  --version "default-s${SEED}-e${EPISODES}x${ENSEMBLE}" \
  --out policy/defaultmodel/model.onnx \
  --report docs/training-report
