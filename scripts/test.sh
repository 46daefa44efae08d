#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this): Node 24 (fetched from the npm
# registry when the machine's node is older), the locked dependencies, Debian's Chromium for
# the browser tests, PostgreSQL and NATS (started when installed but stopped; NATS is
# nats-server 2.10.23 or later, our own on 127.0.0.1:4223 when the machine's is older), the
# type check, the local sentence model's vectors, then every test file; at the end the suite must have left no stream or bucket
# in NATS.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/node.sh
. scripts/node.sh
ensure_node
ensure_dependencies
# Browser tests drive Debian's Chromium through playwright-core, which downloads no browser.
if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else
    echo "The browser tests need Chromium at /usr/bin/chromium ('apt-get install chromium') or CHROMIUM_PATH." >&2
    exit 1
  fi
fi
# nats-server 2.10.23 or later (Debian 13's, fetched into .cache/, when the machine's is older):
# older ones lose acknowledged messages when a cluster node fails.
# shellcheck source=scripts/nats-server.sh
. scripts/nats-server.sh
ensure_nats_server
# shellcheck source=scripts/services.sh
. scripts/services.sh
ensure_postgres
ensure_nats
describe_nats "$TEST_NATS_URL"
npm run typecheck
# The local sentence model's vectors, distilled once (~10 s) rather than by each test process.
node --import tsx scripts/local-model.ts
# Every test file removes what it creates in the shared NATS: compared before and after.
leftovers=$(mktemp)
results=$(mktemp)
trap 'rm -f "$leftovers" "$results"' EXIT
node --import tsx scripts/nats-leftovers.ts snapshot "$leftovers"
# tap builds its runner for .taprc's plugins on the first run in a checkout, but that run still
# starts every test file with the default plugins (ts-node's loader beside tsx): about twice the
# suite's CPU. Built first, even the first run of a fresh clone starts files as .taprc says.
npx tap build >/dev/null
# CI keeps only the end of what a run printed: a failure is repeated there, with its diagnostics.
if ! npm test 2>&1 | tee "$results"; then
  echo "== The failed tests (each 'not ok' with what tap said of it) =="
  grep -n -A 30 '^ *not ok ' "$results" | head -n 400 || true
  exit 1
fi
node --import tsx scripts/nats-leftovers.ts check "$leftovers"
