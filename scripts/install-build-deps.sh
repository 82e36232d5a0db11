#!/usr/bin/env bash
# Installs what the build and tests need from Debian's packages, once: clang
# and libbpf headers for regenerating BPF objects, bpftool for vmlinux.h, npm
# for fetching ONNX Runtime, and the real peers the tests compare against
# (bpftrace, perf, chromium, an HTTP/3 client, protoc, Prometheus and
# promtool, curl, python3, iproute2 for network namespaces), and the targets
# the flame-graph unwinding tests profile (gcc and g++ programs, Debian's
# python3.11, node with --perf-basic-prof). Idempotent: packages already
# present are not fetched again.
set -euo pipefail
pkgs=(clang-16 llvm-16 libbpf-dev bpftool protobuf-compiler bpftrace linux-perf chromium ngtcp2-client gcc g++ binutils python3.11 prometheus curl python3 iproute2)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
command -v npm >/dev/null || missing+=(npm)
command -v node >/dev/null || missing+=(nodejs)
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
