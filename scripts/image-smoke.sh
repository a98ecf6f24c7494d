#!/usr/bin/env bash
# The image's smoke test, with podman: the image `make image` built, on a
# PostgreSQL database of its own, as an operator would run it.
#   1. `duet migrate up` in a container (what the Helm chart's Job runs)
#   2. `duet serve` in a container, API only (DUET_WORKERS=0): /readyz through
#      the published port, and the image's health check
#   3. `duet worker` in a second container: its /readyz on DUET_METRICS
#   4. the sample shop and order MCP server from the image (their own
#      containers); alice registers the server and applies examples/shop.yaml
#   5. a run started over HTTP on serve is claimed by the worker container
#      (the only executor), its browser and mcpCall steps pass, and serve's
#      report shows the screenshot the worker wrote to the shared volume
#   6. SIGTERM stops both gracefully (exit 0)
# Settings: IMAGE (default localhost/duet:$(git describe)), PG (a PostgreSQL
# URL whose server this machine reaches on loopback or an address; default
# $DUET_TEST_POSTGRES_URL: a database duet_smoke_* is made in it and dropped),
# PODMAN_FLAGS (global podman flags), RUN_FLAGS (extra `podman run` flags),
# CONTAINERS_CONF (default: one written for this machine, below), SECCOMP (a seccomp
# profile for the worker, e.g. Docker's default.json: then set
# SANDBOX=off, as on Kubernetes with RuntimeDefault), SANDBOX (on|off).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "smoke [${SECONDS}s]: $*" >&2; }
die() { echo "smoke: FAILED: $*" >&2; exit 1; }

command -v podman >/dev/null || die "podman is missing: apt-get install podman"
command -v psql >/dev/null || die "psql is missing: apt-get install postgresql-client"
IMAGE=${IMAGE:-localhost/duet:$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
PG=${PG:-${DUET_TEST_POSTGRES_URL:-}}
[ -n "$PG" ] || die "set PG to a PostgreSQL URL (postgres://USER@HOST:PORT/DB?sslmode=disable): a database is made there and dropped"
SANDBOX=${SANDBOX:-on}

PODMAN_FLAGS=${PODMAN_FLAGS:-} RUN_FLAGS=${RUN_FLAGS:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/duet-smoke-XXXXXX")
. scripts/lib/podman-conf.sh
pm() { podman $PODMAN_FLAGS "$@"; }
podman image exists "$IMAGE" || die "no image $IMAGE: run make image first (or set IMAGE)"

p=duet-smoke-$$
db=duet_smoke_$$_$RANDOM
cleanup() {
  set +e
  if [ -n "${KEEP:-}" ]; then say "KEEP set: containers $p-* and database $db left in place"; return; fi
  pm pod rm -f -t 0 "$p" >/dev/null 2>&1
  pm volume rm -f "$p-artifacts" >/dev/null 2>&1
  pm secret rm "$p-db" "$p-key" >/dev/null 2>&1
  psql -q "$PG" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# One pod: its containers share a network namespace (as the containers of
# a Kubernetes pod do), so the sample servers, which listen on loopback
# only, are reachable from serve and the worker; the pod reaches the host's
# loopback (a PostgreSQL on 127.0.0.1) at 10.0.2.2 (slirp4netns with
# allow_host_loopback) and publishes serve's 8420 and the worker's 9420 on
# the host's loopback.
pm pod create --name "$p" --network slirp4netns:allow_host_loopback=true -p 127.0.0.1::8420 -p 127.0.0.1::9420 >/dev/null
say "database $db..."
psql -q "$PG" -c "CREATE DATABASE $db" >/dev/null
dburl=$(printf '%s' "$PG" | sed -E "s#@(127\.0\.0\.1|localhost)([:/])#@10.0.2.2\2#; s#(://[^/]*)/[^?]*#\1/$db#")
printf '%s' "$dburl" | pm secret create "$p-db" - >/dev/null
head -c 32 /dev/urandom | base64 | pm secret create "$p-key" - >/dev/null
# Secrets as files readable by the image's user only, as the Helm chart and
# the systemd units give them.
secrets="--secret $p-db,type=mount,target=/run/secrets/database-url,uid=10001,mode=0400 --secret $p-key,type=mount,target=/run/secrets/master-key,uid=10001,mode=0400"
common="--pod $p $RUN_FLAGS $secrets -e DUET_DATABASE_URL_FILE=/run/secrets/database-url -e DUET_MASTER_KEY_FILE=/run/secrets/master-key
  -v $p-artifacts:/var/lib/duet-artifacts:U -e DUET_ARTIFACT_DIR=/var/lib/duet-artifacts -e DUET_MCP_ALLOW_LOOPBACK=true"

say "1. duet --version and migrate up, in containers"
pm run --rm $RUN_FLAGS "$IMAGE" --version
pm run --rm $common "$IMAGE" migrate up

say "2. duet serve (API only)"
pm run -d --name "$p-serve" $common -e DUET_WORKERS=0 "$IMAGE" >/dev/null
port=$(pm port "$p-serve" 8420/tcp | sed 's/.*://')
wport=$(pm port "$p-serve" 9420/tcp | sed 's/.*://')
for _ in $(seq 120); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break
  [ "$(pm inspect -f '{{.State.Running}}' "$p-serve")" = true ] || { pm logs "$p-serve" >&2; die "serve exited"; }
  sleep 0.5
done
echo "GET /readyz on serve: $(curl -fsS "http://127.0.0.1:$port/readyz")"
pm healthcheck run "$p-serve" && echo "podman healthcheck run $p-serve: healthy (the image's HEALTHCHECK, /readyz)"

say "3. duet worker in a second container"
wflags=""
[ -n "${SECCOMP:-}" ] && wflags="--security-opt seccomp=$SECCOMP"
pm run -d --name "$p-worker" $common $wflags -e DUET_WORKERS=1 -e DUET_BROWSER_SANDBOX="$SANDBOX" -e DUET_METRICS=0.0.0.0:9420 "$IMAGE" worker >/dev/null
for _ in $(seq 120); do
  curl -fsS -o /dev/null "http://127.0.0.1:$wport/readyz" 2>/dev/null && break
  [ "$(pm inspect -f '{{.State.Running}}' "$p-worker")" = true ] || { pm logs "$p-worker" >&2; die "worker exited"; }
  sleep 0.5
done
echo "GET /readyz on the worker's DUET_METRICS port: $(curl -fsS "http://127.0.0.1:$wport/readyz")"

say "4. the sample shop and order server (from the image, in the pod)"
shop=8431 orders=8432 # the pod's own loopback
token=$(head -c 16 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
pm run -d --name "$p-shop" --pod "$p" $RUN_FLAGS "$IMAGE" sample shop --addr "127.0.0.1:$shop" >/dev/null
pm run -d --name "$p-orders" --pod "$p" $RUN_FLAGS "$IMAGE" sample order-server --addr "127.0.0.1:$orders" --token "$token" >/dev/null
for _ in $(seq 60); do
  pm logs "$p-shop" 2>/dev/null | grep -q listening && pm logs "$p-orders" 2>/dev/null | grep -q listening && break
  sleep 0.5
done
orderurl=$(pm logs "$p-orders" | sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' | head -n1)
[ -n "$orderurl" ] || die "the order server did not start"
pm exec -e ORDERS_TOKEN="$token" "$p-serve" duet server add --name order-query --url "$orderurl" --bearer-token-env ORDERS_TOKEN --as alice
pm exec -i "$p-serve" duet apply -f /dev/stdin --base-url "http://127.0.0.1:$shop" --as alice <examples/shop.yaml
bearer=$(pm exec "$p-serve" duet token create --as alice 2>/dev/null)

say "5. a run started on serve, executed by the worker container"
call() { curl -fsS "http://127.0.0.1:$port/mcp/tools/call" -H "Authorization: Bearer $bearer" -H 'Content-Type: application/json' -d "$1"; }
task=$(pm exec "$p-serve" duet task list --as alice | awk '$0 ~ /sample-shop/ {print $1; exit}')
[ -n "$task" ] || die "the task was not applied"
started=$(call "{\"name\":\"start_test_run\",\"arguments\":{\"taskId\":\"$task\",\"idempotencyKey\":\"smoke-$p\"}}")
run=$(printf '%s' "$started" | python3 -c 'import json,sys; r=json.load(sys.stdin); r=r.get("structuredContent",r); print(r["runId"])') ||
  die "start_test_run: $started"
echo "run $run queued through serve's /mcp/tools/call"
status=""
for _ in $(seq 600); do
  status=$(call "{\"name\":\"get_test_run\",\"arguments\":{\"runId\":\"$run\"}}" | python3 -c 'import json,sys; r=json.load(sys.stdin); r=r.get("structuredContent",r); print(r.get("run",r)["status"])')
  case "$status" in passed|failed|error|cancelled|canceled) break ;; esac
  sleep 0.5
done
pm exec "$p-serve" duet run show "$run" --as alice
pm logs "$p-worker" 2>&1 | grep -F "$run" | head -n 5
[ "$status" = passed ] || { pm logs "$p-worker" 2>&1 | tail -n 40 >&2; die "run $run ended $status"; }
pm exec "$p-serve" duet report "$run" --as alice -o /tmp/report.html
pm exec "$p-serve" sh -c 'grep -c "data:image/png;base64" /tmp/report.html' >"$work/shots" || true
echo "serve's report embeds $(cat "$work/shots") screenshot(s) the worker wrote to the shared volume"
[ "$(cat "$work/shots")" -ge 1 ] || die "the report has no screenshot"

say "6. SIGTERM: graceful stops"
pm stop -t 30 "$p-worker" >/dev/null
pm stop -t 30 "$p-serve" >/dev/null
echo "exit codes: serve $(pm inspect -f '{{.State.ExitCode}}' "$p-serve"), worker $(pm inspect -f '{{.State.ExitCode}}' "$p-worker")"
pm logs "$p-worker" 2>&1 | tail -n 3
[ "$(pm inspect -f '{{.State.ExitCode}}' "$p-serve")$(pm inspect -f '{{.State.ExitCode}}' "$p-worker")" = 00 ] || die "a process did not stop cleanly"
say "SMOKE OK: $IMAGE served /readyz, migrated, and its worker container ran run $run to passed"
