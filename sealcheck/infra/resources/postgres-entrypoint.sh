#!/bin/bash
# Entrypoint of the sealcheck-postgres image: Debian's PostgreSQL, one cluster, trust auth
# (the database lives on a run's private network and holds test data only).
set -euo pipefail
data=/var/lib/sealcheck-pg
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
mkdir -p "$data" /var/run/postgresql
chown postgres:postgres "$data" /var/run/postgresql
if [ ! -s "$data/PG_VERSION" ]; then
  runuser -u postgres -- "$bin/initdb" -D "$data" -A trust -U postgres >/dev/null
  echo "host all all 0.0.0.0/0 trust" >> "$data/pg_hba.conf"
fi
exec runuser -u postgres -- "$bin/postgres" -D "$data" -c listen_addresses='*' \
  -c fsync=on -c synchronous_commit=on -c max_connections=50 -c shared_buffers=64MB
