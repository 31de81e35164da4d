#!/usr/bin/env bash
# Make sure FUSE 3 is usable (for the lost-writes nemesis's lazy filesystem, infra/lazyfs.py):
# Debian's fuse3 (fusermount3) and libfuse3-3. Idempotent; exits 3 with one line saying why
# when it cannot be installed.
set -euo pipefail
if [ ! -e /dev/fuse ]; then
  echo "fuse: this machine has no /dev/fuse; the lost-writes nemesis cannot run here" >&2
  exit 3
fi
if command -v fusermount3 >/dev/null 2>&1 && ldconfig -p | grep -q 'libfuse3\.so'; then
  echo "fuse: ready ($(command -v fusermount3))"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "fuse: fuse3/libfuse3-3 are not installed and this is not root; install Debian's fuse3 and libfuse3-3" >&2
  exit 3
fi
echo "fuse: installing Debian's fuse3 and libfuse3-3 (first time only)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq fuse3 libfuse3-3 >/dev/null 2>&1 || {
  apt-get update -qq >/dev/null
  apt-get install -y -qq fuse3 libfuse3-3 >/dev/null
}
echo "fuse: ready ($(command -v fusermount3))"
