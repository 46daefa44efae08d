#!/usr/bin/env bash
# Quick start: Node 24 (fetched from the npm registry when the machine's node is older), the
# locked dependencies, PostgreSQL and NATS (started when installed but stopped), then
# `npm start` (which creates the database, migrates and listens on PORT, default 3000), or
# the command given (`npm run demo` runs the demo this way).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/node.sh
. scripts/node.sh
ensure_node
ensure_dependencies
# shellcheck source=scripts/services.sh
. scripts/services.sh
ensure_postgres
ensure_nats
if [ $# -eq 0 ]; then exec npm start; fi
exec "$@"
