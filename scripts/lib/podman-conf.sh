# Sourced by scripts/image-smoke.sh and scripts/systemd-smoke.sh: what this
# machine needs of podman, in a containers.conf of the run's own
# (CONTAINERS_CONF; every container, a pod's infra container included):
# runc where the host's cgroups are "hybrid" (v1 with a v2 hierarchy that
# has controllers), which crun refuses ("cgroups in hybrid mode not
# supported"); ulimits within the hard limits where root lacks
# CAP_SYS_RESOURCE (podman's defaults exceed them: "setrlimit: Operation not
# permitted"). A CONTAINERS_CONF set by the caller wins. Needs $work.
if [ -z "${CONTAINERS_CONF:-}" ]; then
  nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] && nofile=1048576
  {
    echo '[containers]'
    echo "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=16384:16384\"]"
    if grep -qs . /sys/fs/cgroup/unified/cgroup.controllers && command -v runc >/dev/null; then
      printf '[engine]\nruntime = "runc"\n'
    fi
  } >"$work/containers.conf"
  export CONTAINERS_CONF="$work/containers.conf"
fi
