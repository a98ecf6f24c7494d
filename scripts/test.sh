#!/usr/bin/env bash
# The test command: installs what the tests need, checks formatting and
# static analysis, then runs every test with the race detector. Browser and
# interoperability tests do not skip here: DUET_REQUIRE_BROWSER=1,
# DUET_REQUIRE_ADB=1, DUET_REQUIRE_NODE=1, DUET_REQUIRE_SYSTEMD=1 and
# DUET_REQUIRE_FFMPEG=1 make a missing dependency a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "test [${SECONDS}s]: $*" >&2; }
say "checking what the tests need (Chromium, adb, the Node test packages, PostgreSQL, systemd-analyze, ffmpeg)..."
scripts/deps.sh
export DUET_REQUIRE_BROWSER=1 DUET_REQUIRE_ADB=1 DUET_REQUIRE_NODE=1 DUET_REQUIRE_SYSTEMD=1 DUET_REQUIRE_FFMPEG=1

# PostgreSQL: the store suite runs against both engines and the multi-process
# tests need a server. Unless DUET_TEST_POSTGRES_URL names one, start a
# throwaway cluster (initdb + pg_ctl in a temporary directory, trust auth, no
# fsync, loopback, a free port; as the postgres user when run as root),
# removed on exit. DUET_REQUIRE_POSTGRES=1 makes a missing server a failure.
if [ -z "${DUET_TEST_POSTGRES_URL:-}" ]; then
  say "starting a throwaway PostgreSQL..."
  pgbin=$(pg_config --bindir 2>/dev/null || true)
  [ -x "$pgbin/initdb" ] || pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  pgdir=$(mktemp -d "${TMPDIR:-/tmp}/duet-pg-XXXXXX")
  as_pg() {
    if [ "$(id -u)" != 0 ]; then "$@"
    elif command -v runuser >/dev/null; then runuser -u postgres -- "$@"
    else su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; fi
  }
  if [ "$(id -u)" = 0 ]; then chmod 755 "$pgdir"; chown postgres "$pgdir"; fi
  trap 'as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -m immediate -w stop >/dev/null 2>&1 || true; rm -rf "$pgdir"' EXIT
  as_pg "$pgbin/initdb" -D "$pgdir/data" -A trust -U postgres -E UTF8 --no-sync >/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    pgport=$((20000 + RANDOM % 30000))
    if as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 start \
      -o "-p $pgport -k $pgdir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" >/dev/null; then
      export DUET_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable"
      break
    fi
  done
  [ -n "${DUET_TEST_POSTGRES_URL:-}" ] || { echo "test: PostgreSQL did not start:" >&2; cat "$pgdir/server.log" >&2; exit 1; }
fi
export DUET_REQUIRE_POSTGRES=1
export DUET_TEST_NODE_DIR="$PWD/test/node"

say "checking formatting (gofmt) and go.mod..."
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" $unformatted >&2
  exit 1
fi
# go.mod and go.sum list exactly what the code imports (every module: the
# product, the benchmarks, the deployment checks).
for mod in . bench deploy; do
  if ! (cd "$mod" && go mod tidy -diff); then
    echo "go.mod/go.sum of $mod are not tidy: run (cd $mod && go mod tidy)" >&2
    exit 1
  fi
done
say "compiling every package (cold: 8 minutes or more on two cores; progress below)..."
scripts/gobuild.sh ./...
say "go vet..."
go vet ./...
(cd bench && go vet ./...) # the benchmarks are their own module: keep them compiling
say "go vet of the deployment checks' module (deploy/; cold, it compiles Helm and the Kubernetes API types: a minute or more)..."
(cd deploy && go vet ./...) # a module of its own, so that Helm stays out of Duet's go.mod
say "staticcheck (its first run builds it: a minute or more)..."
staticcheck=honnef.co/go/tools/cmd/staticcheck@v0.8.2
go run "$staticcheck" ./...
(cd bench && go run "$staticcheck" ./...)
say "staticcheck of the deployment checks' module (deploy/)..."
(cd deploy && go run "$staticcheck" ./...)
# modernc.org's SQLite is C translated to Go by a program: pointer
# arithmetic throughout, checked by its own project, not code we could
# change. The race detector turns on checkptr, the checks of unsafe.Pointer
# arithmetic, in every package, and instruments every package: under both,
# a fresh database's migrations took 1.49 s against 59 ms, and
# internal/sqlite's tests 154 s of CPU. So modernc's packages are compiled
# without checkptr (81 s), and the translated SQLite itself,
# modernc.org/sqlite/lib, without the race detector's instrumentation too
# (32 s): what the race detector sees of a SQLite linked with cgo, whose C
# side is never instrumented. Every access of ours is still watched. The
# driver (modernc.org/sqlite) and its C library (modernc.org/libc) stay
# instrumented: compiled without, their goroutines and atomics were hidden
# from the race detector, which then reported races in encoding/json's
# caches that no code had. Every other package keeps both. The build above
# and the tests below use the same flags, so the tests reuse what it
# compiled.
race=(-race '-gcflags=modernc.org/...=-d=checkptr=0' '-gcflags=modernc.org/sqlite/lib=-d=checkptr=0 -race=false')
say "compiling every package for the race detector (cold: several minutes; progress below)..."
GOBUILD_LABEL="test build -race" scripts/gobuild.sh "${race[@]}" ./...
# The packages whose tests take longest are named first. go test runs two
# packages at a time here and starts them in the order they are named;
# ./... alone names internal/webui and test/... last, and the last of them
# then ran alone on one core for minutes while the other waited. Named
# first, the short packages fill in around them. (A package named here
# that is gone fails the command: keep the list to what exists.)
slow=(./internal/cli ./internal/webui ./test/interop ./test/e2e ./internal/browser ./internal/api
  ./internal/engine ./internal/step ./internal/postgres ./internal/app)
say "running every test with the race detector (each package prints ok or FAIL when it is done)..."
go test "${race[@]}" -count=1 -timeout 20m "$@" "${slow[@]}" ./...
# The MCP transports once more with their fast paths off: the go-sdk alone
# must pass the same tests (docs/architecture.md, "The MCP fast paths"). The
# whole suite that way: DUET_MCP_FAST_PATH=off scripts/test.sh.
if [ "${DUET_MCP_FAST_PATH:-}" != off ]; then
  say "the MCP transports again with DUET_MCP_FAST_PATH=off (the go-sdk answers every request)..."
  DUET_MCP_FAST_PATH=off go test "${race[@]}" -count=1 -timeout 20m "$@" ./internal/mcpserver/ ./internal/httpapi/... ./internal/lite/... ./internal/conformance/...
fi
say "the deployment checks: helm lint and template, the manifests against the Kubernetes API, the systemd units..."
(cd deploy && go test -count=1 -timeout 10m ./...)
say "all tests passed"
