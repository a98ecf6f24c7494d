#!/usr/bin/env bash
# Runs every fuzz target of the repository (every module: the root and
# bench/), one after the other, for FUZZTIME each (default 30s). Targets are
# discovered with `go test -list`, so new Fuzz* functions are picked up
# without editing this script. FUZZ narrows the run to targets whose name
# matches a regular expression (e.g. FUZZ=FuzzEval); FUZZFLAGS adds flags to
# each `go test` (e.g. FUZZFLAGS=-parallel=1 on a shared machine). A crash leaves its input
# in the package's testdata/fuzz/<target>/ (commit it as a regression seed);
# the script goes on with the other targets and fails at the end.
#
# The seed corpora of all targets also run in the default test suite
# (`go test ./...`), in a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-30s}
FUZZ=${FUZZ:-.}
FUZZFLAGS=${FUZZFLAGS:-}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

targets=()
for mod in . bench; do
  # `go test -list` prints the matching names of a package, then "ok <pkg>";
  # a package that does not build fails the whole script.
  if ! list=$(cd "$mod" && go test -list '^Fuzz' ./...); then
    echo "$list" >&2
    echo "go test -list failed in $mod" >&2
    exit 1
  fi
  while read -r pkg name; do
    targets+=("$mod $pkg $name")
  done < <(awk '/^Fuzz/ {names[n++] = $1} /^ok/ {for (i = 0; i < n; i++) print $2, names[i]; n = 0}' <<<"$list")
done

failed=()
summary=()
for t in "${targets[@]}"; do
  read -r mod pkg name <<<"$t"
  [[ $name =~ $FUZZ ]] || continue
  echo "== $name ($pkg) for $FUZZTIME"
  if (cd "$mod" && go test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" $FUZZFLAGS "$pkg") 2>&1 | tee "$log"; then
    result=ok
  else
    result=FAILED
    failed+=("$name")
  fi
  last=$(grep -Eo 'elapsed: [^,]+, execs: [0-9]+' "$log" | tail -n 1 || true)
  last=${last:-"no fuzzing yet: the cached corpus took all of FUZZTIME to replay"}
  summary+=("$(printf '%-24s %-7s %s' "$name" "$result" "$last")")
done

echo
echo "== fuzz summary (FUZZTIME=$FUZZTIME)"
printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
