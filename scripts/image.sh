#!/usr/bin/env bash
# Build Duet's container image without a container registry: the Go build on
# this machine's toolchain, then a Debian runtime made with debootstrap from
# Debian's package archive (Chromium, fonts for screenshots, CA certificates,
# tini), assembled with buildah into local container storage and saved as a
# docker-archive tar. One image serves `duet serve` and `duet worker` (the
# command decides). Run as root (debootstrap and chroot need it):
#
#   sudo make image            # or: sudo scripts/image.sh
#
# Reproducible: the same commit, Go toolchain, Debian archive state and
# SOURCE_DATE_EPOCH give the same image id and layer digests (scripts/image.sh
# twice, compare). Settings, from the environment:
#   VERSION                 image tag and `duet --version` (default: git describe)
#   SOURCE_DATE_EPOCH       every timestamp in the image (default: the commit's time)
#   IMAGE                   the name (default: localhost/duet:$VERSION)
#   DEBIAN_SUITE            default bookworm
#   DEBIAN_MIRROR           the Debian archive (default: the one this machine's apt
#                           sources name for DEBIAN_SUITE); to pin every package
#                           version, a dated snapshot of the archive
#   DEBIAN_SECURITY_MIRROR  the security archive, where Chromium's updates come from
#                           (default: the one apt names for DEBIAN_SUITE-security);
#                           a dated snapshot of it to pin
#   DUET_BASE_IMAGE         reuse a base image an earlier run built (it prints the
#                           name) instead of running debootstrap again
#   OUT                     output directory (default: bin/image)
# Outputs: the image in containers-storage (podman images), $OUT/duet-$VERSION.tar
# (docker-archive: `docker load -i`, `podman load -i`) and $OUT/duet-$VERSION.packages
# (the Debian packages inside, with versions). docs/deployment.md describes the image.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "image [${SECONDS}s]: $*" >&2; }
die() { echo "image: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot and buildah's storage need it): sudo make image"
for t in debootstrap:debootstrap buildah:buildah skopeo:skopeo unshare:util-linux python3:python3 go:golang; do
  command -v "${t%%:*}" >/dev/null || die "${t%%:*} is missing: apt-get install ${t#*:}"
done
[ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || die "Debian's archive keyring is missing: apt-get install debian-archive-keyring"

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
export SOURCE_DATE_EPOCH
REVISION=$(git rev-parse HEAD)
IMAGE=${IMAGE:-localhost/duet:$VERSION}
export BUILDAH_FORMAT=docker # the health check is a Docker-format field
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}
# The mirrors: by default the ones this machine's apt sources name for the
# suite (one-line and deb822 formats).
apt_uri() { # apt_uri SUITE: the first URI listed for SUITE
  { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
    awk -v suite="$1" '
      /^[[:space:]]*deb[[:space:]]/ { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        if ($(i+1) == suite) { print $i; exit } }
      /^URIs:/ { uri = $2 } /^Suites:/ { for (j = 2; j <= NF; j++) if ($j == suite && uri != "") { print uri; exit } }
      /^[[:space:]]*$/ { uri = "" }' || true
}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-$(apt_uri "$DEBIAN_SUITE")}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-$(apt_uri "$DEBIAN_SUITE-security")}
[ -n "$DEBIAN_MIRROR" ] || die "no Debian mirror for $DEBIAN_SUITE in this machine's apt sources: set DEBIAN_MIRROR"
[ -n "$DEBIAN_SECURITY_MIRROR" ] || die "no Debian security mirror for $DEBIAN_SUITE-security in this machine's apt sources: set DEBIAN_SECURITY_MIRROR"
OUT=${OUT:-bin/image}
SOURCE_URL=https://github.com/duet-test/duet
# The user the processes run as: numeric, so that Kubernetes' runAsNonRoot
# can check it without a passwd lookup.
DUET_UID=10001
# What the runtime needs: Chromium for browser steps; fonts so that
# screenshots of Latin, CJK and emoji text render; CA certificates for https;
# tini as PID 1 (reaps Chromium's orphaned helpers, forwards SIGTERM); curl
# for the health check; tzdata for local times.
PACKAGES="chromium fonts-liberation fonts-dejavu-core fonts-noto-cjk fonts-noto-color-emoji ca-certificates tini curl tzdata"

mkdir -p "$OUT"
work=$(mktemp -d "${TMPDIR:-/tmp}/duet-image-XXXXXX")
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
cache="$OUT/cache" # downloaded .deb files, reused by the next build
mkdir -p "$cache/debootstrap" "$cache/apt/partial"
cache=$(cd "$cache" && pwd)

# --- stage 1: the Go build (static, no cgo: the SQLite driver is pure Go) ---
say "building duet $VERSION (linux/amd64, static)..."
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath \
  -ldflags "-s -w -buildid= -X github.com/duet-test/duet/internal/app.Version=$VERSION" \
  -o "$work/duet" ./cmd/duet
touch -d "@$SOURCE_DATE_EPOCH" "$work/duet"

# --- stage 2: the Debian runtime ---
base=${DUET_BASE_IMAGE:-}
if [ -z "$base" ]; then
  rootfs="$work/rootfs"
  say "debootstrap $DEBIAN_SUITE (minbase) from $DEBIAN_MIRROR (a few minutes; packages are cached in $cache)..."
  debootstrap --variant=minbase --cache-dir="$cache/debootstrap" "$DEBIAN_SUITE" "$rootfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }

  cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $DEBIAN_MIRROR $DEBIAN_SUITE main
deb $DEBIAN_MIRROR $DEBIAN_SUITE-updates main
deb $DEBIAN_SECURITY_MIRROR $DEBIAN_SUITE-security main
EOF
  # Snapshots serve Release files past their Valid-Until date.
  echo 'Acquire::Check-Valid-Until "false";' >"$rootfs/etc/apt/apt.conf.d/99duet-snapshot"
  # No documentation, manual pages or translations (as Debian's slim images;
  # the copyright files stay).
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/duet-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
  printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d" # no service starts in the chroot
  chmod 755 "$rootfs/usr/sbin/policy-rc.d"

  say "installing $PACKAGES (a few minutes)..."
  # A private mount and PID namespace: /proc and the package cache are
  # mounted for the chroot only and vanish with it.
  unshare --mount --pid --fork --kill-child /bin/sh -euc '
    rootfs=$1 cache=$2 uid=$3; shift 3
    mount -t proc proc "$rootfs/proc"
    mount --bind "$cache" "$rootfs/var/cache/apt/archives"
    chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
      DEBIAN_FRONTEND=noninteractive SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" /bin/sh -euc "
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends $* >/dev/null
        groupadd --system --gid $uid duet
        useradd --system --uid $uid --gid $uid --home-dir /home/duet --create-home --shell /usr/sbin/nologin duet
        install -d -o $uid -g $uid -m 0700 /var/lib/duet
      "
  ' sh "$rootfs" "$cache/apt" "$DUET_UID" "$PACKAGES" 2>"$work/install.log" ||
    { tail -n 30 "$work/install.log" >&2; die "installing the packages failed (log above)"; }

  dpkg-query --admindir="$rootfs/var/lib/dpkg" -W -f '${Package} ${Version}\n' >"$work/packages"

  say "removing what differs from build to build (logs, caches, machine id, dates)..."
  rm -f "$rootfs/usr/sbin/policy-rc.d"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/* \
    "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/lib/dpkg/*-old "$rootfs"/var/cache/ldconfig/aux-cache \
    "$rootfs"/tmp/* "$rootfs"/var/tmp/* "$rootfs"/root/.bash_history "$rootfs"/var/cache/fontconfig/*
  # What debootstrap unpacked before the exclusions above existed.
  find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/lintian/*
  find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  # A container gets its name server, host name and machine id at start.
  : >"$rootfs/etc/resolv.conf"
  : >"$rootfs/etc/hostname"
  rm -f "$rootfs/etc/machine-id" "$rootfs/var/lib/dbus/machine-id"
  # Password ages count days from the day of the build: use SOURCE_DATE_EPOCH's.
  day=$((SOURCE_DATE_EPOCH / 86400))
  for f in shadow shadow-; do
    [ -f "$rootfs/etc/$f" ] && sed -i -E "s/^([^:]*:[^:]*:)[0-9]+:/\1$day:/" "$rootfs/etc/$f"
  done
  # Every file dated SOURCE_DATE_EPOCH; then the font cache, which records
  # the dates of the font directories (so it is built after them and stays
  # valid in the image).
  find "$rootfs" -xdev -newermt "@$SOURCE_DATE_EPOCH" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  unshare --mount --pid --fork --kill-child chroot "$rootfs" /usr/bin/env -i PATH=/usr/bin:/bin SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" fc-cache -s
  find "$rootfs" -xdev -newermt "@$SOURCE_DATE_EPOCH" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

  base="localhost/duet-base:$DEBIAN_SUITE-$SOURCE_DATE_EPOCH"
  say "committing the base layer as $base..."
  ctr=$(buildah from scratch)
  mnt=$(buildah mount "$ctr")
  tar -C "$rootfs" --xattrs --xattrs-include='*' --numeric-owner -cf - . | tar -C "$mnt" --xattrs --xattrs-include='*' --numeric-owner -xpf -
  buildah umount "$ctr" >/dev/null
  buildah commit --quiet --rm --format docker --timestamp "$SOURCE_DATE_EPOCH" --identity-label=false "$ctr" "$base" >/dev/null
  cp "$work/packages" "$OUT/duet-base-$DEBIAN_SUITE-$SOURCE_DATE_EPOCH.packages"
  rm -rf "$rootfs"
fi
buildah inspect --type image "$base" >/dev/null 2>&1 || die "no base image $base"
pkgs="$OUT/duet-base-${base##*:}.packages"

# --- the image: the base, then a layer with the binary and the health check ---
say "adding duet to $base and committing $IMAGE..."
cat >"$work/healthcheck" <<'EOF'
#!/bin/sh
# The image's HEALTHCHECK: `duet serve` is healthy while GET /readyz on
# DUET_ADDR's port answers 200 (the database answered within 2 s). Other
# commands (duet worker, duet migrate) serve no HTTP: healthy while running.
set -eu
case " $(tr '\0' ' ' </proc/1/cmdline) " in
*" serve "*) exec curl -fsS -o /dev/null --max-time 5 "http://127.0.0.1:${DUET_ADDR##*:}/readyz" ;;
esac
EOF
chmod 755 "$work/healthcheck"
touch -d "@$SOURCE_DATE_EPOCH" "$work/healthcheck"
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
ctr=$(buildah from --pull-never "$base")
buildah copy --quiet --chown 0:0 "$ctr" "$work/duet" /usr/local/bin/duet >/dev/null
buildah copy --quiet --chown 0:0 "$ctr" "$work/healthcheck" /usr/local/lib/duet/healthcheck >/dev/null
buildah config \
  --entrypoint '["/usr/bin/tini", "--", "/usr/local/bin/duet"]' --cmd serve \
  --user "$DUET_UID:$DUET_UID" --workingdir /var/lib/duet \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env DUET_HOME=/var/lib/duet --env DUET_ADDR=0.0.0.0:8420 --env HOME=/home/duet --env LANG=C.UTF-8 \
  --port 8420/tcp --volume /var/lib/duet --stop-signal SIGTERM \
  --healthcheck 'CMD /usr/local/lib/duet/healthcheck' --healthcheck-interval 30s --healthcheck-timeout 10s \
  --healthcheck-start-period 30s --healthcheck-retries 3 \
  --label org.opencontainers.image.title=duet \
  --label "org.opencontainers.image.description=Duet: a self-hosted AI testing platform (MCP server and MCP client); the command decides: serve, worker, migrate up" \
  --label "org.opencontainers.image.version=$VERSION" \
  --label "org.opencontainers.image.revision=$REVISION" \
  --label "org.opencontainers.image.source=$SOURCE_URL" \
  --label "org.opencontainers.image.url=$SOURCE_URL" \
  --label "org.opencontainers.image.documentation=$SOURCE_URL/blob/$REVISION/docs/deployment.md" \
  --label "org.opencontainers.image.created=$created" \
  --label "org.opencontainers.image.base.name=debian:$DEBIAN_SUITE (debootstrap --variant=minbase)" \
  --created-by "scripts/image.sh" \
  "$ctr"
buildah commit --quiet --rm --format docker --timestamp "$SOURCE_DATE_EPOCH" --identity-label=false "$ctr" "$IMAGE" >/dev/null

# Docker's format records the builder container's id and a random host name
# in the image configuration: blank them, so that the same inputs give the
# same image id, and store the image again.
rm -rf "$work/dir"
skopeo copy --quiet "containers-storage:$IMAGE" "dir:$work/dir" 2>/dev/null
python3 - "$work/dir" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
with open(os.path.join(d, "manifest.json")) as f:
    m = json.load(f)
old = m["config"]["digest"].split(":", 1)[1]
with open(os.path.join(d, old)) as f:
    c = json.load(f)
c.pop("container", None)
for k in ("config", "container_config"):
    if isinstance(c.get(k), dict):
        c[k]["Hostname"] = ""
b = json.dumps(c, separators=(",", ":"), sort_keys=True).encode()
new = hashlib.sha256(b).hexdigest()
os.remove(os.path.join(d, old))
with open(os.path.join(d, new), "wb") as f:
    f.write(b)
m["config"]["digest"], m["config"]["size"] = "sha256:" + new, len(b)
with open(os.path.join(d, "manifest.json"), "w") as f:
    json.dump(m, f, separators=(",", ":"))
PY
buildah rmi "$IMAGE" >/dev/null
skopeo copy --quiet "dir:$work/dir" "containers-storage:$IMAGE" 2>/dev/null

tar="$OUT/duet-$VERSION.tar"
rm -f "$tar"
skopeo copy --quiet "dir:$work/dir" "docker-archive:$tar:$IMAGE" 2>/dev/null
[ -f "$pkgs" ] && cp "$pkgs" "$OUT/duet-$VERSION.packages"
id=$(buildah inspect --type image --format '{{.FromImageID}}' "$IMAGE")
say "built $IMAGE"
echo "image:   $IMAGE (id sha256:$id)"
echo "base:    $base (reuse with DUET_BASE_IMAGE=$base)"
echo "layers:  $(skopeo inspect --format '{{.Layers}}' "containers-storage:$IMAGE" 2>/dev/null)"
echo "archive: $tar ($(du -h "$tar" | cut -f1)); load with: docker load -i $tar"
