#!/usr/bin/env bash
# Make sure Debian's headless-capable chromium is installed (for rendering reports in tests).
# Prints the browser's path. Exits 3 with one line saying why when it cannot be installed.
set -euo pipefail
for name in chromium chromium-browser; do
  if command -v "$name" >/dev/null 2>&1; then
    command -v "$name"
    exit 0
  fi
done
if [ "$(id -u)" != 0 ]; then
  echo "chromium: not installed and this is not root; install Debian's chromium package" >&2
  exit 3
fi
echo "chromium: installing Debian's chromium (first time only)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
command -v chromium
