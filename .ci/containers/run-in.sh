#!/usr/bin/env bash
# run-in.sh [--user UID[:GID]] CONFIG -- CMD [ARGS...]
# Runs CMD in a rootful podman container of the named CONFIG (image.sh's skeleton rootfs), with no
# network, the host's /usr read-only, the repository read-only at its own path, a fresh /tmp (tmpfs, exec)
# and HOME=/tmp/home. Exits with CMD's exit code (125..127 are podman's own). Always removes its container
# (also on SIGTERM/SIGINT and on RUN_IN_TIMEOUT, default 600 s).
#
# CONFIGs (all with `--ulimit nofile=20000:20000 --ulimit nproc=32768:32768`: podman's defaults exceed the
# hard limits of hosts whose root lacks CAP_SYS_RESOURCE):
#   default     runc, default security (11 capabilities, podman's seccomp profile, masked /proc paths)
#   sysadmin    default + --cap-add SYS_ADMIN
#   unmask      default + --security-opt unmask=ALL
#   tier1caps   default + --cap-add SYS_ADMIN --cap-add SYS_PTRACE --cap-add NET_ADMIN
#   privileged  --privileged
#   runsc       gVisor (runsc, ptrace platform) as the OCI runtime
#   runsc-sysadmin  runsc + --cap-add SYS_ADMIN
#   runsc-newer runsc as `runsc`, but gVisor's newer generation (bookworm-backports, runsc-newer.sh)
# Env: ALEPH_REPO (default: the git toplevel of the cwd), ALEPH_CI_CACHE, RUN_IN_TIMEOUT, RUNSC_PLATFORM.
# Variables named ALEPH_* and CI are passed in.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
user=""
if [ "${1:-}" = --user ]; then user=$2; shift 2; fi
config=${1:?usage: run-in.sh [--user UID] CONFIG -- CMD...}; shift
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "run-in.sh: no command" >&2; exit 2; }

cache=$("$here/image.sh")
repo=${ALEPH_REPO:-$(git -C "$here" rev-parse --show-toplevel)}
repo=$(cd "$repo" && pwd -P)
global=(--runtime runc)
args=(--rm --network none --init=false --pull never
      --ulimit nofile=20000:20000 --ulimit nproc=32768:32768
      -v /usr:/usr:ro -v "$repo:$repo:ro"
      --tmpfs /tmp:rw,exec,nosuid,mode=1777
      -e HOME=/tmp/home -e PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
      -e ALEPH_REPO="$repo" -w /tmp)
case $config in
  default) ;;
  sysadmin) args+=(--cap-add SYS_ADMIN) ;;
  unmask) args+=(--security-opt unmask=ALL) ;;
  tier1caps) args+=(--cap-add SYS_ADMIN --cap-add SYS_PTRACE --cap-add NET_ADMIN) ;;
  privileged) args+=(--privileged) ;;
  # ignore-cgroups: runsc cannot set up hybrid cgroups; network=none: with podman's --network none alone
  # runsc refuses to start ("cannot run with network enabled in root network namespace").
  runsc|runsc-sysadmin|runsc-newer)
    runtime=$(command -v runsc || true)
    [ "$config" = runsc-newer ] && runtime=$("$here/runsc-newer.sh")
    global=(--runtime "$runtime" --runtime-flag ignore-cgroups --runtime-flag network=none
            --runtime-flag "platform=${RUNSC_PLATFORM:-ptrace}")
    [ "$config" = runsc-sysadmin ] && args+=(--cap-add SYS_ADMIN) ;;
  *) echo "run-in.sh: unknown config $config" >&2; exit 2 ;;
esac
[ -n "$user" ] && args+=(--user "$user")
for v in $(compgen -e); do
  case $v in ALEPH_REPO) ;; ALEPH_*|CI) args+=(-e "$v=${!v}") ;; esac
done

name="aleph-ci-$config-$$-$RANDOM"
# podman runs in the background and is waited for, so a TERM/INT to this script (or the timeout) removes
# the container at once: podman only forwards the signal to the container's PID 1, which ignores it.
cleanup() { podman rm -f -t 0 "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
exec 3<&0
set +e
timeout -k 3 "${RUN_IN_TIMEOUT:-600}" \
  podman "${global[@]}" run --name "$name" -i "${args[@]}" --rootfs "$cache/rootfs:O" \
  /bin/sh -c 'mkdir -p "$HOME" && exec "$@"' sh "$@" <&3 &
wait $!
rc=$?
set -e
exit $rc
