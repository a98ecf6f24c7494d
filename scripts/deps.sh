#!/usr/bin/env bash
# Install what Duet's demo and tests need on a Debian/Ubuntu machine with Go:
#   - Chromium and, where packaged, its headless shell from the
#     distribution's packages (browser steps), when missing
#   - adb from the distribution's packages (Android phones: duet device list,
#     --device android:SERIAL; the tests run the real binary), when missing
#   - the pinned Node packages of test/node (clients and servers we did not
#     write: the MCP TypeScript SDK, inspector-cli, MCP Inspector, the
#     conformance suite and a Node 22 binary for them), when not installed yet
#   - the PostgreSQL server programs (initdb, pg_ctl) from the distribution's
#     packages, when missing: the tests start throwaway clusters with them
#   - systemd-analyze (package systemd), when missing: deploy/ verifies the
#     systemd units with it
#   - ffmpeg from the distribution's packages, when missing: exporting a
#     trace's replay as a video (optional in production; tested here)
# Go modules are fetched by the go command itself. Safe to re-run.
#   scripts/deps.sh [browser] [adb] [node] [postgres] [systemd] [ffmpeg]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
want="${*:-browser adb node postgres systemd ffmpeg}"

sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [[ " $want " == *" browser "* ]]; then
  if [ -n "${DUET_CHROME_PATH:-}" ] || command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; then
    :
  else
    echo "deps: installing Chromium from the distribution's packages (a few minutes)..." >&2
    sudo_ apt-get update -qq
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
  # Chromium's headless shell, where the distribution packages it (Debian 12
  # and later): Chromium without its browser UI, which Duet starts before the
  # full browser; a browser case costs it about 0.57x the CPU
  # (docs/performance.md, part 12). The full browser above stays: the
  # console's own browser tests walk it as a person's browser.
  if [ -z "${DUET_CHROME_PATH:-}" ] && ! command -v chromium-headless-shell >/dev/null; then
    policy=$(apt-cache policy chromium-headless-shell 2>/dev/null || true)
    if [[ "$policy" == *"Candidate: "[0-9]* ]]; then
      echo "deps: installing Chromium's headless shell from the distribution's packages..." >&2
      sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null
    else
      echo "deps: no chromium-headless-shell package here: browser steps run in the full Chromium" >&2
    fi
  fi
fi

if [[ " $want " == *" adb "* ]]; then
  if [ -n "${DUET_ADB_PATH:-}" ] || command -v adb >/dev/null; then
    :
  else
    echo "deps: installing adb from the distribution's packages..." >&2
    sudo_ apt-get update -qq
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq adb >/dev/null
  fi
fi

if [[ " $want " == *" ffmpeg "* ]]; then
  if command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null; then
    :
  else
    echo "deps: installing ffmpeg from the distribution's packages..." >&2
    sudo_ apt-get update -qq
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg >/dev/null
  fi
fi

if [[ " $want " == *" node "* ]]; then
  if ! command -v npm >/dev/null; then
    echo "deps: installing Node.js and npm from the distribution's packages..." >&2
    sudo_ apt-get update -qq
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  fi
  stamp=test/node/node_modules/.duet-installed
  if [ ! -f "$stamp" ] || [ test/node/package-lock.json -nt "$stamp" ]; then
    echo "deps: installing the pinned Node test packages (about 350 MB)..." >&2
    (cd test/node && npm ci --no-audit --no-fund --loglevel=error)
    touch "$stamp"
  fi
fi

if [[ " $want " == *" postgres "* ]]; then
  pgbin=$(pg_config --bindir 2>/dev/null || true)
  if [ ! -x "$pgbin/initdb" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    echo "deps: installing PostgreSQL from the distribution's packages..." >&2
    sudo_ apt-get update -qq
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
fi

if [[ " $want " == *" systemd "* ]]; then
  if ! command -v systemd-analyze >/dev/null; then
    echo "deps: installing systemd-analyze (package systemd) from the distribution's packages..." >&2
    sudo_ apt-get update -qq
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null
  fi
fi
