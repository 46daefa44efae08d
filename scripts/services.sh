#!/usr/bin/env bash
# Makes sure PostgreSQL and NATS (JetStream) answer on this machine, starting them when they
# are installed but stopped. Sourced by scripts/run.sh and scripts/test.sh, after
# scripts/nats-server.sh (ensure_nats_server), whose helpers ensure_nats uses.
# shellcheck source=scripts/nats-server.sh
declare -F version_at_least >/dev/null || . "$(dirname "${BASH_SOURCE[0]}")/nats-server.sh"
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
    local versions=(/etc/postgresql/*)
    pg_ctlcluster --skip-systemctl-redirect "${versions[0]##*/}" main start || true
  fi
  wait_for postgres "$PG_HOST" "$PG_PORT" 30 && return 0
  echo "PostgreSQL is not reachable on $PG_HOST:$PG_PORT. Start it (pg_ctlcluster ... main start, or 'docker compose up -d postgres') or set DATABASE_URL." >&2
  return 1
}

# The version in the INFO line that the NATS server on $1:$2 sends on connect
# (`INFO {..."version":"2.10.27",...,"jetstream":true,...}`), with " js" after it when
# JetStream is on; empty when nothing answers there as NATS within 3 s.
nats_info() {
  local line
  # shellcheck disable=SC2016 # $0 and $1 are expanded by the inner bash: the host and port.
  line=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1" && IFS= read -r -t 2 line <&3 && printf "%s" "$line"' "$1" "$2" 2>/dev/null) || return 0
  [[ $line =~ \"version\":\"([0-9][0-9.]*) ]] || return 0
  printf '%s' "${BASH_REMATCH[1]}"
  [[ $line == *'"jetstream":true'* ]] && printf ' js'
  echo
}

# The host and port of the first server of a NATS URL list (nats://user:pass@host:4222, ...).
nats_url_address() {
  local first=${1%%,*}
  first=${first#"${first%%[![:space:]]*}"}
  first=${first#*://}
  first=${first##*@}
  first=${first%%/*}
  case $first in
    \[*\]:*) echo "${first%%]:*}" | tr -d '[' && echo "${first##*]:}" ;;
    \[*\]) echo "$first" | tr -d '[]' && echo 4222 ;;
    *:*) echo "${first%:*}" && echo "${first##*:}" ;;
    *) echo "$first" && echo 4222 ;;
  esac
}

# A NATS URL list as printed: without user names and passwords.
# shellcheck disable=SC2001 # one regular expression for every URL of the list
nats_url_shown() { sed 's#//[^@/,]*@#//#g' <<<"$1"; }

# One line for scripts/test.sh and scripts/run.sh: the NATS at URL $1 and its version.
describe_nats() {
  local -a address
  local info
  mapfile -t address < <(nats_url_address "$1")
  info=$(nats_info "${address[0]}" "${address[1]}")
  info=${info%% *}
  echo "NATS: nats-server ${info:-(version unknown)} at $(nats_url_shown "$1")" >&2
}

# A nats-server with JetStream of our own (NATS_SERVER_BIN, from scripts/nats-server.sh) on
# 127.0.0.1:$MAS_NATS_PORT (4223), beside the machine's on 4222. Its store is outside the
# checkout, one per version and port (a store is never opened by an older server than the one
# that wrote it). It runs on after the script (setsid, nohup), as the machine's services do,
# and the next run reuses it.
start_own_nats() {
  local port=${MAS_NATS_PORT:-4223} bin=${NATS_SERVER_BIN:-nats-server} version info dir
  bin=$(command -v "$bin") || bin=""
  version=$(nats_server_version "$bin")
  info=$(nats_info 127.0.0.1 "$port")
  if [ -z "$info" ] && port_open 127.0.0.1 "$port"; then
    echo "127.0.0.1:$port, where our own nats-server would listen, is taken by something that is not NATS: free it or set MAS_NATS_PORT." >&2
    return 1
  fi
  if [ -z "$info" ]; then
    dir="${TMPDIR:-/tmp}/mas-nats-$version-$port"
    mkdir -p "$dir"
    echo "Starting nats-server $version with JetStream on 127.0.0.1:$port (store $dir, log $dir/nats-server.log)" >&2
    (
      cd / || exit
      if command -v setsid >/dev/null 2>&1; then
        exec setsid nohup "$bin" -a 127.0.0.1 -p "$port" -js -sd "$dir" -l "$dir/nats-server.log" </dev/null >/dev/null 2>&1
      fi
      exec nohup "$bin" -a 127.0.0.1 -p "$port" -js -sd "$dir" -l "$dir/nats-server.log" </dev/null >/dev/null 2>&1
    ) &
    wait_for nats 127.0.0.1 "$port" 30 || true
    info=$(nats_info 127.0.0.1 "$port")
  fi
  if [ "${info#* }" != js ] || ! version_at_least "${info%% *}" "$NATS_SERVER_MIN"; then
    [ -z "$info" ] || info="nats-server ${info%% *}$([ "${info#* }" = js ] || echo ' without JetStream')"
    echo "The NATS on 127.0.0.1:$port is ${info:-not answering} (wanted: nats-server $NATS_SERVER_MIN or later with JetStream). Stop it, or set MAS_NATS_PORT to a free port.${dir:+ Its log: $dir/nats-server.log}" >&2
    return 1
  fi
  export NATS_URL="nats://127.0.0.1:$port" TEST_NATS_URL="nats://127.0.0.1:$port"
}

# The NATS that the service, the demo and the tests use: NATS_URL (or TEST_NATS_URL) when set,
# only checked; else the one on $NATS_HOST:$NATS_PORT (the machine's, 4222) when it is
# nats-server 2.10.23 or later; else our own (start_own_nats) when scripts/nats-server.sh found
# a new enough binary; else the machine's, started when it is installed but stopped. Exports
# NATS_URL and TEST_NATS_URL.
ensure_nats() {
  local url info
  local -a address
  url=${NATS_URL:-${TEST_NATS_URL:-}}
  if [ -n "$url" ]; then
    export NATS_URL="${NATS_URL:-$url}" TEST_NATS_URL="${TEST_NATS_URL:-$url}"
    mapfile -t address < <(nats_url_address "$url")
    info=$(nats_info "${address[0]}" "${address[1]:-4222}")
    if [ -z "$info" ]; then
      echo "Warning: NATS at $(nats_url_shown "$url") does not answer (or not in plain NATS); it is used as set." >&2
    elif ! version_at_least "${info%% *}" "$NATS_SERVER_MIN"; then
      echo "Warning: NATS at $(nats_url_shown "$url") is nats-server ${info%% *}, older than $NATS_SERVER_MIN: it can lose acknowledged messages when a cluster node fails." >&2
    fi
    return 0
  fi
  info=$(nats_info "$NATS_HOST" "$NATS_PORT")
  if ! version_at_least "${info%% *}" "$NATS_SERVER_MIN" && version_at_least "$(nats_server_version "${NATS_SERVER_BIN:-nats-server}")" "$NATS_SERVER_MIN"; then
    start_own_nats
    return
  fi
  export NATS_URL="nats://$NATS_HOST:$NATS_PORT" TEST_NATS_URL="nats://$NATS_HOST:$NATS_PORT"
  if [ -n "$info" ]; then
    version_at_least "${info%% *}" "$NATS_SERVER_MIN" \
      || echo "Warning: NATS on $NATS_HOST:$NATS_PORT is nats-server ${info%% *}, older than $NATS_SERVER_MIN: it can lose acknowledged messages when a cluster node fails." >&2
    return 0
  fi
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
