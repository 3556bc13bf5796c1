#!/usr/bin/env bash
# Assembles, idempotently and in about a second once cached, what run-in.sh needs to run commands in real
# containers without any registry: $ALEPH_CI_CACHE/rootfs, a skeleton root filesystem (a copy of the
# host's /etc, empty mount points, the merged-/usr symlinks) that run-in.sh uses as `--rootfs DIR:O`
# (podman puts a throwaway overlay on top) with the host's /usr bound read-only over it, so node, bwrap,
# git and coreutils are the host's. Installs podman, runc, uidmap and runsc (gVisor) from the
# distribution when missing (Debian/Ubuntu, ~20 s once; `--no-install-recommends` keeps crun out, which
# refuses hybrid cgroups). Prints the cache directory.
# Env: ALEPH_CI_CACHE (default /var/tmp/aleph-ci), ALEPH_CI_NO_INSTALL=1 to never run apt-get.
set -euo pipefail
cache=${ALEPH_CI_CACHE:-/var/tmp/aleph-ci}
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

need=()
for p in podman runc uidmap runsc; do
  dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || need+=("$p")
done
command -v bwrap >/dev/null || need+=(bubblewrap)
if [ ${#need[@]} -gt 0 ]; then
  if [ "${ALEPH_CI_NO_INSTALL:-}" = 1 ] || ! command -v apt-get >/dev/null; then
    echo "image.sh: missing packages: ${need[*]}" >&2
    exit 1
  fi
  echo "image.sh: apt-get install ${need[*]}" >&2
  ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1 || apt-get update -qq
  inst() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
  inst || { apt-get update -qq && inst; }
fi

# The skeleton is rebuilt into a new directory and swapped in, so running containers are not disturbed.
stamp=$(cat /var/lib/dpkg/status /etc/passwd /etc/group | md5sum | cut -c1-16)
if [ "$(cat "$cache/rootfs.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -d "$cache/rootfs/etc" ]; then
  new="$cache/rootfs.new.$$"
  rm -rf "$new"
  mkdir -p "$new"/{usr,etc,tmp,root,home,proc,sys,dev,run,var/tmp,mnt,opt,work}
  for l in bin lib lib64 sbin; do ln -s "usr/$l" "$new/$l"; done
  cp -a /etc/. "$new/etc/"
  chmod 1777 "$new/tmp" "$new/var/tmp"
  old="$cache/rootfs.old.$$"
  [ -d "$cache/rootfs" ] && mv "$cache/rootfs" "$old"
  mv "$new" "$cache/rootfs"
  rm -rf "$old" "$cache"/rootfs.old.* 2>/dev/null || true
  echo "$stamp" >"$cache/rootfs.stamp"
fi
echo "$cache"
