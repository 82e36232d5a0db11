#!/usr/bin/env bash
# Rebuilds the embedded default model, bit for bit, with the trainer and
# recipe of the commit that built it, and writes it to
# policy/defaultmodel/model.onnx with its report in docs/training-report/.
# Run by `make model`.
#
# policy/defaultmodel/provenance.txt names that commit and the model's
# sha256. The commit is checked out in a temporary worktree, its own recipe
# runs there (scripts/train-candidate-model.sh with the recorded version, or
# for a commit older than that script, its scripts/train-default-model.sh;
# either builds its own triage), and the output is copied here only if its
# sha256 is the recorded one; any
# other result is an error and changes nothing. Why a pinned trainer and not
# this tree's: the trainer and the simulator have changed since the shipped
# model was trained, and no model this tree's recipe trains has yet passed
# the checks a default must pass (docs/training.md, "Which model ships, and
# how `make model` rebuilds it"). `make model-candidate` trains this tree's
# recipe without touching the embedded model.
#
# Needs the repository's history (a clone, not an export or a shallow
# clone), Go, and the module proxy or cache for the old commit's modules.
# About 5 minutes on 2 idle cores.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PROV=policy/defaultmodel/provenance.txt
field() { awk -v k="$1" '$1 == k { print $2 }' "$PROV"; }
COMMIT="$(field commit)"
WANT="$(field sha256)"
VERSION="$(field version)"
if [ -z "$COMMIT" ] || [ -z "$WANT" ] || [ -z "$VERSION" ]; then
  echo "train-default-model: $PROV lacks its commit, version or sha256 line" >&2
  exit 1
fi
if ! git cat-file -e "${COMMIT}^{commit}" 2>/dev/null; then
  echo "train-default-model: commit $COMMIT (the default model's trainer) is not in this repository;" >&2
  echo "  make model needs the history: git fetch --unshallow, or a full clone" >&2
  exit 1
fi
# make exports the library's path already; fetch it only when run by hand
# (a plain assignment, so that a failed fetch stops the script).
if [ -z "${TRIAGE_ONNXRUNTIME_LIB:-}" ]; then
  TRIAGE_ONNXRUNTIME_LIB="$(./scripts/fetch-onnxruntime.sh)"
fi
export TRIAGE_ONNXRUNTIME_LIB
WORK="$(mktemp -d "${TMPDIR:-/tmp}/triage-model.XXXXXX")"
cleanup() {
  git -C "$ROOT" worktree remove --force "$WORK/src" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
git worktree add --detach "$WORK/src" "$COMMIT" >/dev/null
echo "train-default-model: training with the recipe and trainer of ${COMMIT:0:12} in $WORK/src" >&2
# The recipe reads TRIAGE_MODEL_* variables: clear them, so that the
# rebuild is the recorded one whatever this shell has set.
for v in $(env | awk -F= '/^TRIAGE_MODEL_/ { print $1 }'); do unset "$v"; done
if [ -x "$WORK/src/scripts/train-candidate-model.sh" ]; then
  # A commit of this layout: its recipe is the candidate script, and the
  # shipped model's name is the recorded version.
  (cd "$WORK/src" && BIN="$WORK/triage" OUT="$WORK/out" TRIAGE_MODEL_VERSION="$VERSION" \
    ./scripts/train-candidate-model.sh)
else
  # An older commit: its train-default-model.sh was the recipe, and wrote
  # into its own tree.
  (cd "$WORK/src" && BIN="$WORK/triage" ./scripts/train-default-model.sh)
  mkdir -p "$WORK/out"
  cp "$WORK/src/policy/defaultmodel/model.onnx" "$WORK/out/model.onnx"
  cp -r "$WORK/src/docs/training-report" "$WORK/out/report"
fi
GOT="$(sha256sum "$WORK/out/model.onnx" | awk '{ print $1 }')"
if [ "$GOT" != "$WANT" ]; then
  echo "train-default-model: the rebuilt model's sha256 is $GOT, the recorded one $WANT:" >&2
  echo "  the build is not reproducible here; nothing was changed" >&2
  exit 1
fi
cp "$WORK/out/model.onnx" policy/defaultmodel/model.onnx
rm -rf docs/training-report
cp -r "$WORK/out/report" docs/training-report
echo "train-default-model: rebuilt policy/defaultmodel/model.onnx, sha256 $GOT as recorded" >&2
