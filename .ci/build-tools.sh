#!/usr/bin/env bash
# The build tools the e2e build flows run inside the sandbox (e2e/linux/build-flows.test.ts): a C compiler,
# make, cmake and git. Installs what is missing where apt works (Debian/Ubuntu, as root); elsewhere the
# flows that need a missing tool are skipped and say why.
set -euo pipefail
missing=()
command -v cc >/dev/null || missing+=(gcc libc6-dev)
command -v make >/dev/null || missing+=(make)
command -v cmake >/dev/null || missing+=(cmake)
command -v git >/dev/null || missing+=(git)
[ "${#missing[@]}" -eq 0 ] && exit 0
command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] || { echo "cannot install ${missing[*]}: needs apt-get as root" >&2; exit 1; }
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
