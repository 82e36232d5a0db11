#!/usr/bin/env bash
# h3-peer-check.sh: a client nobody here wrote (ngtcp2's example client,
# Debian package ngtcp2-client, binary gtlsclient) posts a JSON task batch
# to an agent's POST /v1/decide over HTTP/3 and the answer must carry
# decisions. Usage:
#
#   scripts/h3-peer-check.sh [HOST [PORT]]     (default 127.0.0.1 4433)
#
# gtlsclient cannot add request headers, so the agent must accept the call
# without a bearer token (its loopback default).
#
# agent/serve's TestRealHTTP3Peer runs it against an endpoint started in the
# test, so CI runs it on every `make test`.
set -euo pipefail

host=${1:-127.0.0.1}
port=${2:-4433}
client=${GTLSCLIENT:-gtlsclient}
command -v "$client" >/dev/null || { echo "h3-peer-check: $client not found (apt-get install ngtcp2-client)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/body.json" <<'JSON'
{"tasks":[{"id":1,"class":"interactive","sla_ms":20,"cost_ms":2,"tenant":"peer-check"},
          {"id":2,"class":"batch","sla_ms":5000,"cost_ms":900,"tenant":"peer-check"}]}
JSON

# The agent's certificate is self-signed: gtlsclient warns about it and goes
# on (it does not abort on verification failure). --exit-on-all-streams-close
# ends it once the answer is in; --download saves the body as $work/dl/decide.
mkdir "$work/dl"
timeout 20 "$client" -q --exit-on-all-streams-close --download "$work/dl" \
  -m POST -d "$work/body.json" \
  "$host" "$port" "https://$host:$port/v1/decide" >"$work/stdout" 2>&1 || {
  echo "h3-peer-check: $client failed:" >&2; cat "$work/stdout" >&2; exit 1; }

out=$(cat "$work/dl/decide" 2>/dev/null || true)
echo "$out"
if ! grep -q '"decisions":\[{"id":1,"priority":[0-4],"q":\[' <<<"$out"; then
  echo "h3-peer-check: no decisions in the answer" >&2
  cat "$work/stdout" >&2
  exit 1
fi
echo "h3-peer-check: ok ($client → https://$host:$port/v1/decide)" >&2
