#!/usr/bin/env bash
# Fetches the ONNX Runtime CPU shared library (from the onnxruntime-node npm
# package, which ships the official build) into a cache outside the repo,
# checks its checksum, and prints the library's path. Idempotent: a cached,
# verified copy is reused without touching the network.
set -euo pipefail
ORT_VERSION="${ORT_VERSION:-1.30.0}"
CACHE="${TRIAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/triage}/onnxruntime/${ORT_VERSION}"
LIB="$CACHE/libonnxruntime.so.1"
SUMS="$(cd "$(dirname "$0")" && pwd)/onnxruntime.sha256"

want=$(awk -v v="$ORT_VERSION" '$2==v {print $1}' "$SUMS")
if [ -z "$want" ]; then
  echo "fetch-onnxruntime: no checksum for version $ORT_VERSION in $SUMS" >&2
  exit 1
fi
if [ -f "$LIB" ] && [ "$(sha256sum "$LIB" | cut -d' ' -f1)" = "$want" ]; then
  echo "$LIB"
  exit 0
fi
if ! command -v npm >/dev/null; then
  # A fresh Debian machine has no npm; install it from Debian's packages when we can.
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "fetch-onnxruntime: installing npm (Debian package) to fetch onnxruntime-node" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >&2
  else
    echo "fetch-onnxruntime: npm is needed (apt-get install -y npm)" >&2
    exit 1
  fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "onnxruntime-node@${ORT_VERSION}" >/dev/null)
tar -xzf "$tmp"/onnxruntime-node-*.tgz -C "$tmp" package/bin/napi-v6/linux/x64/libonnxruntime.so.1
got=$(sha256sum "$tmp/package/bin/napi-v6/linux/x64/libonnxruntime.so.1" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
  echo "fetch-onnxruntime: checksum mismatch for onnxruntime $ORT_VERSION: got $got, want $want" >&2
  exit 1
fi
mkdir -p "$CACHE"
install -m 0644 "$tmp/package/bin/napi-v6/linux/x64/libonnxruntime.so.1" "$LIB.tmp"
mv "$LIB.tmp" "$LIB"
echo "$LIB"
