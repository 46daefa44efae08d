#!/usr/bin/env bash
# Makes sure PostgreSQL and NATS (JetStream) answer on this machine, starting them when they
# are installed but stopped. Sourced by scripts/run.sh and scripts/test.sh.
PG_HOST=${PG_HOST:-127.0.0.1}
PG_PORT=${PG_PORT:-5432}
NATS_HOST=${NATS_HOST:-127.0.0.1}
NATS_PORT=${NATS_PORT:-4222}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

wait_for() { # name host port seconds
  for _ in $(seq 1 "$4"); do port_open "$2" "$3" && return 0; sleep 1; done
  return 1
}

ensure_postgres() {
  port_open "$PG_HOST" "$PG_PORT" && return 0
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "PostgreSQL is not answering on $PG_HOST:$PG_PORT; starting it" >&2
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  fi
  wait_for postgres "$PG_HOST" "$PG_PORT" 30 && return 0
  echo "PostgreSQL is not reachable on $PG_HOST:$PG_PORT. Start it (pg_ctlcluster ... main start, or 'docker compose up -d postgres') or set DATABASE_URL." >&2
  return 1
}

ensure_nats() {
  port_open "$NATS_HOST" "$NATS_PORT" && return 0
  if command -v nats-server >/dev/null 2>&1; then
    echo "NATS is not answering on $NATS_HOST:$NATS_PORT; starting nats-server with JetStream" >&2
    mkdir -p /var/lib/nats-server 2>/dev/null || true
    start-stop-daemon --start --oknodo --background --exec "$(command -v nats-server)" -- -a "$NATS_HOST" -p "$NATS_PORT" -js -sd /var/lib/nats-server 2>/dev/null \
      || (nohup nats-server -a "$NATS_HOST" -p "$NATS_PORT" -js -sd "${TMPDIR:-/tmp}/nats-js" >/dev/null 2>&1 &)
  fi
  wait_for nats "$NATS_HOST" "$NATS_PORT" 30 && return 0
  echo "NATS is not reachable on $NATS_HOST:$NATS_PORT. Start it ('nats-server -js', or 'docker compose up -d nats') or set NATS_URL." >&2
  return 1
}
