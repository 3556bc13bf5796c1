#!/usr/bin/env bash
# Sets up a checkout: pnpm 12.4.2, bubblewrap (Linux), dependencies, and a build (TypeScript + the native
# Linux helper). Safe to re-run. Works on a fresh Debian/Ubuntu machine with Node 20+, npm and a C compiler,
# as root (or with sudo available for the apt step, which also installs the compilers the helpers need).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*" >&2; }

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  say "Node 20 or newer is required (found: $(node -v 2>/dev/null || echo none)). Install it from https://nodejs.org or your package manager."
  exit 1
fi

if [ "$(pnpm -v 2>/dev/null || true)" != "12.4.2" ]; then
  say "installing pnpm 12.4.2 with npm (corepack's copy fails signature checks on Node 20)"
  npm install --global --no-fund --no-audit --loglevel=error pnpm@12.4.2 >&2
fi

# Linux: bubblewrap to run sandboxes; a C compiler with a static C library, the aarch64 cross compiler
# and qemu-user to build and test both platform packages' helpers (@aleph/driver-linux-x64, -arm64).
if [ "$(uname -s)" = "Linux" ]; then
  need=()
  command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
  command -v cc >/dev/null 2>&1 || need+=(gcc)
  [ -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ -f /usr/lib/aarch64-linux-gnu/libc.a ] || need+=(libc6-dev)
  case "$(uname -m)" in
    x86_64)
      command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu)
      [ -f /usr/aarch64-linux-gnu/lib/libc.a ] || need+=(libc6-dev-arm64-cross)
      command -v qemu-aarch64-static >/dev/null 2>&1 || need+=(qemu-user-static)
      ;;
    aarch64)
      command -v x86_64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-x86-64-linux-gnu)
      [ -f /usr/x86_64-linux-gnu/lib/libc.a ] || need+=(libc6-dev-amd64-cross)
      command -v qemu-x86_64-static >/dev/null 2>&1 || need+=(qemu-user-static)
      ;;
  esac
  if [ "${#need[@]}" -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1; then
      sudo=""
      if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
      say "installing ${need[*]} from the distribution archive"
      $sudo apt-get update -qq >&2 || true
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >&2
    else
      say "missing: ${need[*]}; install them with your package manager (e.g. dnf install bubblewrap gcc glibc-static) and re-run"
      say "(without the cross compiler the other architecture's platform package is left unbuilt)"
      command -v bwrap >/dev/null 2>&1 || exit 1
    fi
  fi
fi

# pnpm 12 does not hand npm's nodedir to node-gyp; where Node's headers are installed system-wide, point
# node-gyp at them so re2 builds without downloading headers. Elsewhere node-gyp downloads them as usual.
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node_version.h ]; then
  export npm_config_nodedir=/usr
fi
export TURBO_TELEMETRY_DISABLED=1

say "installing dependencies"
pnpm install --frozen-lockfile >&2
say "building"
pnpm --loglevel silent run build >&2
say "done"
