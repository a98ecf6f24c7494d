#!/usr/bin/env bash
# bench/autowait.sh [PAIRS] [BASE]: issue 27's "auto-waiting must not make
# passing suites slower". Builds BenchmarkAutoWait (internal/engine) on this
# tree and on BASE (default 0150424, the tree before locators and
# actionability, given this tree's Chromium switches so that only the
# test language differs), runs them alternately PAIRS times (default 3;
# each pair in turn starts with the other tree, so a machine that gets
# busier or quieter favours neither) and prints each run and the ratios of
# the sums, after ÷ before.
set -euo pipefail
pairs=${1:-3}
base=${2:-0150424}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'git -C "$repo" worktree remove --force "$work/before" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$repo" worktree add -q --detach "$work/before" "$base"
cp "$repo/internal/engine/autowait_bench_test.go" "$work/before/internal/engine/"
printf 'package engine_test\n\nimport "github.com/duet-test/duet/internal/engine"\n\nfunc awOptions(*engine.Options) {}\n' \
  > "$work/before/internal/engine/autowait_opts_test.go"
features=$(grep -o '{"disable-features", "[^"]*"}' "$repo/internal/browser/options.go")
sed -i "s/{\"disable-features\", \"[^\"]*\"}/$features/" "$work/before/internal/browser/options.go"
(cd "$work/before" && go test -c -o "$work/before.test" ./internal/engine/)
(cd "$repo" && go test -c -o "$work/after.test" ./internal/engine/)
run() { (cd "$repo/internal/engine" && "$work/$1.test" -test.run '^$' -test.bench '^BenchmarkAutoWait$' -test.benchtime 3x) |
  awk -v t="$1" '/^BenchmarkAutoWait/ { for (i = 3; i < NF; i++) if ($(i+1) ~ /^p[14]-/) m[$(i+1)] = $i
    printf "%s p1 %s ms/run %s cpu-ms/case  p4 %s ms/run %s cpu-ms/case\n", t, m["p1-ms/run"], m["p1-cpu-ms/case"], m["p4-ms/run"], m["p4-cpu-ms/case"] }'; }
out=$work/runs
for i in $(seq "$pairs"); do
  if (( i % 2 )); then order="before after"; else order="after before"; fi
  for t in $order; do run "$t" | tee -a "$out"; done
done
awk '{ w1[$1] += $3; c1[$1] += $5; w4[$1] += $8; c4[$1] += $10 }
  END { printf "after ÷ before (sums of %d pairs): p1 wall %.2fx, p1 CPU per case %.2fx, p4 wall %.2fx, p4 CPU per case %.2fx\n",
    NR / 2, w1["after"] / w1["before"], c1["after"] / c1["before"], w4["after"] / w4["before"], c4["after"] / c4["before"] }' "$out"
