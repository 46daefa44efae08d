#!/usr/bin/env bash
# Quick start: install dependencies when needed, check PostgreSQL and NATS, then `npm start`
# (which creates the database, migrates and listens on PORT, default 3000).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
# shellcheck source=scripts/services.sh
. scripts/services.sh
ensure_postgres
ensure_nats
exec npm start
