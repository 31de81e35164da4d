#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine.
#   - installs Debian's docker.io (and iptables) if dockerd is missing (needs root),
#   - starts dockerd in the background if it is not running, logging to $SEALCHECK_DOCKERD_LOG,
#   - waits until `docker info` answers.
# Exits 0 when the engine is up; exits 3 with one line saying why when it cannot be started.
set -euo pipefail
log=${SEALCHECK_DOCKERD_LOG:-/var/log/sealcheck-dockerd.log}

if docker info >/dev/null 2>&1; then
  exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "docker-engine: dockerd is not installed and this is not root; install Debian's docker.io" >&2
    exit 3
  fi
  echo "docker-engine: installing Debian's docker.io" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq docker.io iptables >/dev/null
fi
if ! pgrep -x dockerd >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "docker-engine: dockerd is not running and only root can start it" >&2
    exit 3
  fi
  echo "docker-engine: starting dockerd (log: $log)" >&2
  nohup dockerd >"$log" 2>&1 &
fi
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    exit 0
  fi
  sleep 1
done
echo "docker-engine: dockerd did not answer within 60 s; last lines of $log:" >&2
tail -n 5 "$log" >&2 || true
exit 3
