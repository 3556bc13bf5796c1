#!/usr/bin/env bash
# Prints the path of a runsc from gVisor's newer generation (2023-11 on): Debian 12's bookworm-backports
# package (20240729 when written), unpacked once into $ALEPH_CI_CACHE/runsc-backports without installing it,
# so the system's runsc (Debian 12's own, 20221219) stays what run-in.sh's `runsc` config uses. The apt
# lists it needs are its own (a sources list naming only bookworm-backports, checked with Debian's archive
# key); the system's apt configuration is not touched. Exits 1, saying why, where it cannot be fetched.
set -euo pipefail
cache=${ALEPH_CI_CACHE:-/var/tmp/aleph-ci}
dir="$cache/runsc-backports"
if [ -x "$dir/runsc" ]; then echo "$dir/runsc"; exit 0; fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if ! command -v apt-get >/dev/null || [ ! -r "$keyring" ] || ! grep -qx 'VERSION_CODENAME=bookworm' /etc/os-release; then
  echo "runsc-newer.sh: needs Debian 12 (bookworm) with apt-get and $keyring" >&2
  exit 1
fi
mkdir -p "$cache"
exec 9>"$cache/.runsc-backports.lock"
flock 9
if [ -x "$dir/runsc" ]; then echo "$dir/runsc"; exit 0; fi
work=$(mktemp -d "$cache/runsc-backports.new.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial"
echo "deb [signed-by=$keyring] http://deb.debian.org/debian bookworm-backports main" >"$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives"
          -o Debug::NoLocking=1 -qq)
if ! apt-get "${apt_opts[@]}" update >"$work/log" 2>&1 ||
   ! (cd "$work" && apt-get "${apt_opts[@]}" download runsc/bookworm-backports >>"$work/log" 2>&1); then
  echo "runsc-newer.sh: could not fetch runsc from bookworm-backports: $(tail -1 "$work/log")" >&2
  exit 1
fi
dpkg-deb -x "$work"/runsc_*.deb "$work/root"
mkdir -p "$dir.tmp"
install -m 0755 "$work/root/usr/bin/runsc" "$dir.tmp/runsc"
"$dir.tmp/runsc" --version | head -1 >"$dir.tmp/version"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
echo "$dir/runsc"
