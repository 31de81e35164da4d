#!/usr/bin/env bash
# Build the offline base image: a debootstrapped Debian bookworm rootfs with a headless JRE 17
# python3 and PostgreSQL, imported with `docker import`. Rebuilt only when its inputs change: the tag is a
# hash of this script. Prints the image tag on stdout (progress goes to stderr).
#   SEALCHECK_CACHE   cache directory (default: $XDG_CACHE_HOME/sealcheck, else ~/.cache/sealcheck,
#                     as sealcheck.infra.paths.cache_dir, which passes it)
#   SEALCHECK_MIRROR  Debian mirror (default: the one this machine's apt uses)
set -euo pipefail
xdg=${XDG_CACHE_HOME:-}
[[ $xdg == /* ]] || xdg=$HOME/.cache
cache=${SEALCHECK_CACHE:-$xdg/sealcheck}
suite=bookworm
packages=openjdk-17-jre-headless,python3,python3-venv,procps,iproute2,iptables,ca-certificates,postgresql
mirror=${SEALCHECK_MIRROR:-$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)}
mirror=${mirror:-http://deb.debian.org/debian}
hash=$(cat "$0" | sha256sum | cut -c1-12)
tag="sealcheck-base:$hash"

if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi
command -v debootstrap >/dev/null 2>&1 || {
  echo "base-image: installing debootstrap" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
}
rootfs="$cache/rootfs-$hash"
if [ ! -e "$rootfs/.complete" ]; then
  rm -rf "$rootfs"
  mkdir -p "$rootfs"
  echo "base-image: debootstrap $suite from $mirror into $rootfs" >&2
  debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" >&2
  chroot "$rootfs" apt-get clean
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
  touch "$rootfs/.complete"
fi
echo "base-image: importing $tag" >&2
tar -C "$rootfs" --exclude=./.complete -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' \
  - "$tag" >/dev/null
docker tag "$tag" sealcheck-base:latest
echo "$tag"
