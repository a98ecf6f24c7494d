#!/usr/bin/env bash
# The demo: installs Chromium if needed, builds duet and runs `duet demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "demo [${SECONDS}s]: $*" >&2; }
say "checking for Chromium..."
scripts/deps.sh browser
say "building duet into bin/duet (the first build fetches the Go modules and compiles for a minute or more; later ones take seconds)..."
mkdir -p bin
go build -o bin/duet ./cmd/duet
say "starting the demo"
exec bin/duet demo "$@"
