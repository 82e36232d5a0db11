#!/usr/bin/env bash
# Checks that the committed generated code matches its sources: regenerates
# the bpf2go output (go generate ./bpf/...) and the protoc output
# (go generate ./wire) in a temporary copy of the working tree, laid out
# under the same relative paths, and compares every file of the copy with
# the working tree byte for byte. The working tree itself is never written.
# Fails, naming each file that differs, appears or disappears.
#
# Needs clang-16 and protoc (scripts/install-build-deps.sh, `make deps`);
# bpf2go and protoc-gen-go are the module's pinned tools (go.mod).
#
# Usage: scripts/check-generated.sh [TREE]   (TREE defaults to this checkout)
set -euo pipefail
tree="$(cd "${1:-$(dirname "$0")/..}" && pwd)"
generate=(./bpf/... ./wire)

for tool in git clang-16 protoc; do
  command -v "$tool" >/dev/null || {
    echo "check-generated: $tool not found (run make deps)" >&2
    exit 2
  }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
copy="$tmp/$(basename "$tree")"
mkdir "$copy"

# The copy holds what the working tree holds, committed or not (ignored
# build outputs aside), so a source edited but not yet committed is checked
# against the generated files as they are now.
(cd "$tree" && git ls-files -z --cached --others --exclude-standard) |
  while IFS= read -r -d '' f; do
    # A file deleted in the working tree but not yet in the index stays out.
    [ -e "$tree/$f" ] && printf '%s\0' "$f"
  done >"$tmp/files"
(cd "$tree" && tar --null -T "$tmp/files" -cf -) | tar -xf - -C "$copy"

if ! (cd "$copy" && go generate "${generate[@]}") >"$tmp/generate.log" 2>&1; then
  cat "$tmp/generate.log" >&2
  echo "check-generated: go generate ${generate[*]} failed" >&2
  exit 1
fi

stale=()
while IFS= read -r -d '' f; do
  f="${f#./}"
  if [ ! -e "$tree/$f" ]; then
    stale+=("$f (new: generated but not committed)")
  elif ! cmp -s "$tree/$f" "$copy/$f"; then
    stale+=("$f (differs from its regenerated copy)")
  fi
done < <(cd "$copy" && find . -type f -print0 | sort -z)
while IFS= read -r -d '' f; do
  [ -e "$copy/$f" ] || stale+=("$f (gone: go generate removed it)")
done <"$tmp/files"

if [ ${#stale[@]} -gt 0 ]; then
  echo "check-generated: generated files do not match their sources; run make generate and commit:" >&2
  printf '  %s\n' "${stale[@]}" >&2
  exit 1
fi
echo "check-generated: bpf2go and protoc output match their sources"
