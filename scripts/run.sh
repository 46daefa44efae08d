#!/usr/bin/env bash
# Quick start: Node 24 (fetched from the npm registry when the machine's node is older), the
# locked dependencies, PostgreSQL and NATS (started when installed but stopped; NATS is
# nats-server 2.10.23 or later, our own on 127.0.0.1:4223 when the machine's is older), then
# `npm start` (which creates the database, migrates and listens on PORT, default 3000), or
# the command given (`npm run demo` runs the demo this way).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/node.sh
. scripts/node.sh
ensure_node
ensure_dependencies
# nats-server 2.10.23 or later (Debian 13's, fetched into .cache/, when the machine's is older):
# older ones lose acknowledged messages when a cluster node fails.
# shellcheck source=scripts/nats-server.sh
. scripts/nats-server.sh
ensure_nats_server
# shellcheck source=scripts/services.sh
. scripts/services.sh
ensure_postgres
ensure_nats
describe_nats "$NATS_URL"
# A terminal gets readable log lines (LOG_FORMAT=pretty); a pipe or a file keeps one JSON object per line.
if [ -t 1 ] && [ -z "${LOG_FORMAT:-}" ]; then export LOG_FORMAT=pretty; fi
if [ $# -eq 0 ]; then exec npm start; fi
exec "$@"
