#!/usr/bin/env bash
# The demo: installs Chromium if needed, builds duet and runs `duet demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh browser
mkdir -p bin
go build -o bin/duet ./cmd/duet
exec bin/duet demo "$@"
