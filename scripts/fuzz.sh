#!/usr/bin/env bash
# Runs every fuzz target of the module (go test -list '^Fuzz') for FUZZTIME
# each, one after another, and fails if any finds an input that breaks it.
# Go writes such an input into the package's testdata/fuzz/<Target>/: fix
# the code and commit the input, which `go test` (and so `make test`) then
# runs every time beside the seeds.
#
#   FUZZTIME          per target (default 1m), as go test -fuzztime takes it
#   FUZZMINIMIZETIME  time to minimise a new input (default 10s; the default
#                     of go test, 60s, stalls the slow targets)
#   FUZZPARALLEL      fuzzing workers per target (default: GOMAXPROCS)
#   FUZZPKGS          packages to look in (default ./...)
#   FUZZSAVE=1        also copy up to 32 of the inputs each run found
#                     interesting (from the Go build cache) into
#                     testdata/fuzz/<Target>/, to commit as corpus
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-1m}
mintime=${FUZZMINIMIZETIME:-10s}
parallel=()
if [[ -n "${FUZZPARALLEL:-}" ]]; then parallel=(-parallel "$FUZZPARALLEL"); fi
read -r -a pkgs <<<"${FUZZPKGS:-./...}"

# "go test -list" prints a package's matching names, then its "ok" line.
targets=()
names=()
while IFS= read -r line; do
	case "$line" in
	Fuzz*) names+=("$line") ;;
	ok*)
		pkg=$(awk '{print $2}' <<<"$line")
		for n in "${names[@]}"; do targets+=("$pkg $n"); done
		names=()
		;;
	*) names=() ;;
	esac
done < <(go test -list '^Fuzz' "${pkgs[@]}")
if [[ ${#targets[@]} -eq 0 ]]; then
	echo "fuzz: no fuzz targets in ${pkgs[*]}" >&2
	exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${fuzztime} each"

cache=$(go env GOCACHE)/fuzz
failed=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "== $pkg $name"
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$mintime" "${parallel[@]}" "$pkg"; then
		failed+=("$pkg $name")
	fi
	if [[ "${FUZZSAVE:-}" == 1 && -d "$cache/$pkg/$name" ]]; then
		dir=$(go list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$name
		mkdir -p "$dir"
		# The smallest first: cheap to run in every go test. (Listed first:
		# head closing the pipe early must not trip pipefail.)
		mapfile -t found < <(find "$cache/$pkg/$name" -type f -size -64k -printf '%s %p\n' | sort -n | head -32 | cut -d' ' -f2-)
		for f in "${found[@]}"; do
			cp -n "$f" "$dir/"
		done
	fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
	echo "fuzz: ${#failed[@]} target(s) failed:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	echo "the failing inputs are in each package's testdata/fuzz/<Target>/ (git status shows them)" >&2
	exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${fuzztime} without a failure"
