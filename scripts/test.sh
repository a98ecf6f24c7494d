#!/usr/bin/env bash
# The test command: installs what the tests need, checks formatting and
# static analysis, then runs every test with the race detector. Browser and
# interoperability tests do not skip here: DUET_REQUIRE_BROWSER=1,
# DUET_REQUIRE_ADB=1 and DUET_REQUIRE_NODE=1 make a missing dependency a
# failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
export DUET_REQUIRE_BROWSER=1 DUET_REQUIRE_ADB=1 DUET_REQUIRE_NODE=1
export DUET_TEST_NODE_DIR="$PWD/test/node"

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" $unformatted >&2
  exit 1
fi
go vet ./...
(cd bench && go vet ./...) # the benchmarks are their own module: keep them compiling
staticcheck=honnef.co/go/tools/cmd/staticcheck@v0.8.2
go run "$staticcheck" ./...
(cd bench && go run "$staticcheck" ./...)
go test -race -count=1 -timeout 20m "$@" ./...
