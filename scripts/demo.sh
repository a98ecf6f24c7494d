#!/usr/bin/env bash
# The demo: installs Chromium if needed, builds duet and runs `duet demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "demo [${SECONDS}s]: $*" >&2; }
say "checking for Chromium (installed from the distribution's packages when missing: a few minutes)..."
scripts/deps.sh browser
say "building duet into bin/duet (the first build fetches the Go modules and compiles about 400 packages: 8 minutes or more on two cores, progress below; later builds take seconds)..."
mkdir -p bin
scripts/gobuild.sh -o bin/duet ./cmd/duet
say "starting the demo"
exec bin/duet demo "$@"
