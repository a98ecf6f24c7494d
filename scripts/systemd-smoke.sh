#!/usr/bin/env bash
# The systemd units under a real systemd, on a machine whose own PID 1 is not
# systemd: systemd 252 runs as PID 1 of a podman container made from the
# image `make image` built (Debian's systemd is in it, a dependency of
# Chromium's), privileged so that it can give the units their namespaces.
#   1. systemd-analyze verify of both units against the real binary
#   2. duet.service (DynamicUser, every hardening option of the file) serves
#      /readyz; a browser case queued as alice passes, executed by the
#      service's own workers, with Chromium's sandbox on: its zygote runs in a
#      user namespace of its own
#   3. duet-worker.service on PostgreSQL: /readyz on its DUET_METRICS port
#      (its credentials replaced by a drop-in: see step 3)
#   4. systemctl stop: both stop with result "success"
# Settings: IMAGE (default localhost/duet:$(git describe)), PG (a PostgreSQL
# URL this machine reaches on loopback; default $DUET_TEST_POSTGRES_URL; a
# database duet_sd_* is made there and dropped; without it step 3 is skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "systemd-smoke [${SECONDS}s]: $*" >&2; }
die() { echo "systemd-smoke: FAILED: $*" >&2; exit 1; }

command -v podman >/dev/null || die "podman is missing: apt-get install podman"
IMAGE=${IMAGE:-localhost/duet:$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
PG=${PG:-${DUET_TEST_POSTGRES_URL:-}}
podman image exists "$IMAGE" || die "no image $IMAGE: run make image first (or set IMAGE)"
work=$(mktemp -d "${TMPDIR:-/tmp}/duet-sd-XXXXXX")
. scripts/lib/podman-conf.sh

c=duet-systemd-$$
db=duet_sd_$$_$RANDOM
cleanup() {
  set +e
  podman rm -f -t 0 "$c" >/dev/null 2>&1
  [ -n "$PG" ] && psql -q "$PG" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
ct() { podman exec -w / "$c" "$@"; }
# A command as the service's dynamic user "duet" on its state directory
# (systemd gives two units with DynamicUser and the same User= one uid).
as_duet() { ct systemd-run --wait --pipe --quiet -p DynamicUser=yes -p User=duet -p StateDirectory=duet -p CacheDirectory=duet \
  -E DUET_HOME=/var/lib/duet -E HOME=/var/cache/duet /usr/local/bin/duet "$@"; }

say "booting systemd in a container of $IMAGE..."
# --image-volume ignore: the image's DUET_HOME volume would be a mount point
# at /var/lib/duet, which StateDirectory cannot move into /var/lib/private;
# the container has no network to wait for (network-online.target).
# The image's own DUET_HOME directory is removed before systemd starts: a
# directory of a lower overlay layer cannot be moved into /var/lib/private
# (EXDEV), and on a machine StateDirectory makes its own.
podman run -d --name "$c" --privileged --systemd=always --user root --image-volume ignore \
  --entrypoint '["/bin/sh", "-c", "rm -rf /var/lib/duet && exec /lib/systemd/systemd"]' \
  --network slirp4netns:allow_host_loopback=true -v /dev/null:/etc/systemd/system/systemd-networkd-wait-online.service:ro \
  -v "$PWD/deploy/systemd/duet.service:/etc/systemd/system/duet.service:ro" \
  -v "$PWD/deploy/systemd/duet-worker.service:/etc/systemd/system/duet-worker.service:ro" \
  "$IMAGE" >/dev/null
state=""
for _ in $(seq 240); do # until it has booted (degraded: systemd-firstboot wants a machine id)
  state=$(ct systemctl is-system-running 2>/dev/null || true)
  case "$state" in running|degraded) break ;; esac
  sleep 0.5
done
echo "systemd $(ct systemctl --version | head -n1 | cut -d' ' -f2) is $state"
[ "$state" = running ] || [ "$state" = degraded ] || die "systemd did not come up: $state"

say "1. systemd-analyze verify (the real binary at ExecStart)"
ct systemd-analyze verify /etc/systemd/system/duet.service /etc/systemd/system/duet-worker.service
ct systemd-analyze security duet.service --no-pager | tail -n 1

say "2. duet.service: /readyz and a browser case with Chromium's sandbox"
ct systemctl start duet || { ct journalctl -u duet --no-pager -o cat | tail -n 20 >&2; die "duet did not start"; }
for _ in $(seq 120); do ct curl -fsS -o /dev/null http://127.0.0.1:8420/readyz 2>/dev/null && break; sleep 0.5; done
echo "GET /readyz: $(ct curl -fsS http://127.0.0.1:8420/readyz)"
ct systemd-run --unit duet-shop --quiet -p DynamicUser=yes /usr/local/bin/duet sample shop --addr 127.0.0.1:8431
ct mkdir -p /etc/duet
podman exec -i -w / "$c" sh -c 'cat >/etc/duet/suite.yaml' <<'EOF'
task:
  name: systemd-browser
  baseURL: http://127.0.0.1:8431
  device: iphone-15
cases:
  - key: login-flow
    title: A shopper signs in (Chromium under duet.service's hardening)
    steps:
      - open: /login
      - fill: {selector: "#username", value: alice}
      - fill: {selector: "#password", value: not-a-real-password}
      - click: "#login-submit"
      - waitFor: {urlContains: "welcome="}
      - assertText: {selector: "#welcome", contains: alice}
      - screenshot: welcome page
EOF
ct chmod 0644 /etc/duet/suite.yaml
as_duet apply -f /etc/duet/suite.yaml --as alice
run=$(as_duet run systemd-browser --detach --as alice)
out=""
for _ in $(seq 240); do
  out=$(as_duet run show "$run" --as alice 2>&1 || true)
  case "$out" in *": passed "*|*": failed "*|*": error "*) break ;; esac
  sleep 0.5
done
echo "$out"
case "$out" in *": passed "*) ;; *) ct journalctl -u duet --no-pager -o cat | tail -n 20 >&2; die "run $run did not pass" ;; esac
# Chromium's sandbox: a zygote in a user namespace other than systemd's.
sandboxed=$(ct sh -c 'init=$(readlink /proc/1/ns/user); for p in /proc/[0-9]*; do
  case "$(tr "\0" " " <$p/cmdline 2>/dev/null)" in *--type=zygote*) [ "$(readlink $p/ns/user)" != "$init" ] && echo $p;; esac; done' | wc -l)
echo "Chromium zygotes in a user namespace of their own (its sandbox): $sandboxed"
[ "$sandboxed" -ge 1 ] || die "Chromium ran without its sandbox"

if [ -n "$PG" ]; then
  say "3. duet-worker.service on PostgreSQL"
  psql -q "$PG" -c "CREATE DATABASE $db" >/dev/null
  url=$(printf '%s' "$PG" | sed -E "s#@(127\.0\.0\.1|localhost)([:/])#@10.0.2.2\2#; s#(://[^/]*)/[^?]*#\1/$db#")
  # In this container systemd's credentials are unreadable by the service
  # (LoadCredential fails with "Permission denied" even for a static User=;
  # an environment limit, not the unit's): a drop-in gives the URL and a key
  # in the environment instead; the rest of the unit runs as written.
  ct mkdir -p /etc/systemd/system/duet-worker.service.d
  printf '[Service]\nLoadCredential=\nEnvironment=DUET_DATABASE_URL_FILE= DUET_MASTER_KEY_FILE= DUET_DATABASE_URL=%s DUET_MASTER_KEY=%s\n' \
    "$url" "$(head -c 32 /dev/urandom | base64)" | podman exec -i -w / "$c" sh -c 'umask 077; cat >/etc/systemd/system/duet-worker.service.d/smoke.conf'
  ct systemctl daemon-reload
  ct systemctl start duet-worker || { ct journalctl -u duet-worker --no-pager -o cat | tail -n 20 >&2; die "duet-worker did not start"; }
  for _ in $(seq 120); do ct curl -fsS -o /dev/null http://127.0.0.1:9420/readyz 2>/dev/null && break; sleep 0.5; done
  ready=$(ct curl -fsS http://127.0.0.1:9420/readyz || true)
  echo "duet-worker GET /readyz on 127.0.0.1:9420: $ready"
  [ "$ready" = ready ] || { ct journalctl -u duet-worker --no-pager -o cat | tail -n 20 >&2; die "duet-worker is not ready"; }
  ct systemctl stop duet-worker
  echo "duet-worker stopped: $(ct systemctl show duet-worker -p Result --value)"
  [ "$(ct systemctl show duet-worker -p Result --value)" = success ] || die "duet-worker did not stop cleanly"
else
  say "3. skipped: no PG"
fi

say "4. systemctl stop duet"
ct systemctl stop duet
echo "duet stopped: $(ct systemctl show duet -p Result --value)"
[ "$(ct systemctl show duet -p Result --value)" = success ] || die "duet did not stop cleanly"
ct journalctl -u duet --no-pager -o cat | grep -E 'stopping|stopped' | tail -n 2
say "SYSTEMD SMOKE OK"
