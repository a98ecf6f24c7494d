#!/usr/bin/env bash
# go build with progress: `scripts/gobuild.sh [-o OUT] PACKAGES...`.
# A cold build of Duet compiles about 400 packages (8 minutes or more on two
# cores) and go build is silent meanwhile; go build -v names each package as
# it compiles it (a package the build cache holds is not named), so this
# counts them against the packages the build needs and says how far it is:
# one line rewritten in place on a terminal, a line at each tenth and at
# least every 30 s in a log. Errors pass through as go prints them; the exit
# status is go build's.
set -euo pipefail
label="${GOBUILD_LABEL:-build}"
args=("$@")
pkgs=()
skip=0
for a in "$@"; do
  if [ "$skip" = 1 ]; then skip=0; continue; fi
  case "$a" in
    -o) skip=1 ;;
    -*) ;;
    *) pkgs+=("$a") ;;
  esac
done
total=$(go list -deps "${pkgs[@]}" 2>/dev/null | wc -l) || total=0
tty=0
[ -t 2 ] && tty=1
start=$SECONDS
n=0
step=$(( total / 10 )); [ "$step" -gt 0 ] || step=1
next=$step
lastsaid=$SECONDS
say() { echo "$label [$((SECONDS - start))s]: $*" >&2; }
# go build -v prints package paths (and errors) on stderr; nothing on stdout.
narrate() {
while IFS= read -r line; do
  if [[ "$line" =~ ^[A-Za-z0-9._~/+-]+$ ]]; then
    n=$((n + 1))
    if [ "$tty" = 1 ]; then
      printf '\r\033[K%s [%ss]: compiled %d of at most %d packages: %s' "$label" "$((SECONDS - start))" "$n" "$total" "$line" >&2
    elif [ "$n" -ge "$next" ] || [ $((SECONDS - lastsaid)) -ge 30 ]; then
      say "compiled $n of at most $total packages ($line)"
      while [ "$next" -le "$n" ]; do next=$((next + step)); done
      lastsaid=$SECONDS
    fi
  else
    [ "$tty" = 1 ] && printf '\r\033[K' >&2
    printf '%s\n' "$line" >&2
  fi
done
if [ "$tty" = 1 ]; then printf '\r\033[K' >&2; fi
say "compiled $n of $total packages (the others came from the build cache)"
}
status=0
go build -v "${args[@]}" 2>&1 | narrate || status=${PIPESTATUS[0]}
exit "$status"
