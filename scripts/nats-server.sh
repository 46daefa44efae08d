#!/usr/bin/env bash
# Puts a nats-server of at least 2.10.23 first on PATH and exports NATS_SERVER_BIN, the binary
# the scripts start and the tests spawn (test/support/nats-binary.ts). Older servers, the
# 2.9.10 of Debian 12 among them, lose acknowledged messages when a cluster node fails.
# When the `nats-server` on PATH is older (or missing), Debian 13's package is fetched with
# apt-get into a temporary directory and its binary unpacked into .cache/nats-server-<version>/
# (ignored by git), where it is reused on the next run. apt-get runs there on its own sources
# list, lists and cache: the machine's apt sources and installed packages are left as they are
# and nothing is installed. Sourced by scripts/run.sh (so `npm run demo` too), scripts/test.sh
# and scripts/services.sh.
NATS_SERVER_MIN=2.10.23
# Debian 13 (trixie) ships 2.10.27; its binary runs on Debian 12 as well.
NATS_SERVER_DEBIAN_SUITE=${NATS_SERVER_DEBIAN_SUITE:-trixie}
NATS_SERVER_DEBIAN_MIRROR=${NATS_SERVER_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# The x.y.z a nats-server binary reports (`nats-server: v2.10.27`); empty when it does not run
# (and no failure then, for the callers' `set -e -o pipefail`).
nats_server_version() {
  { "${1:-nats-server}" --version 2>/dev/null || true; } | sed -n 's/^nats-server: v\{0,1\}\([0-9][0-9.]*\).*/\1/p' | head -1
}

# Whether version $1 (x.y.z) is at least $2; an empty $1 (no server) is not.
version_at_least() {
  [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]
}

# Fetches Debian's nats-server package for $2 (amd64, arm64) and moves its binary to
# $1/.cache/nats-server-<version>/nats-server; prints that path. Messages go to stderr.
# A subshell, so that its traps (the temporary files go however it ends) stay its own.
fetch_nats_server() (
  local root=$1 arch=$2 tmp entry deb dir staging="" version started=$SECONDS
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp" ${staging:+"$staging"}' EXIT
  trap 'exit 130' INT TERM HUP
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
  entry="$NATS_SERVER_DEBIAN_MIRROR $NATS_SERVER_DEBIAN_SUITE main"
  # Debian's own keyring when it is here (Debian has it; Ubuntu once debian-archive-keyring is
  # installed); else apt's trusted keys, as for any source.
  if [ -r /usr/share/keyrings/debian-archive-keyring.gpg ]; then entry="[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $entry"; fi
  echo "deb $entry" >"$tmp/sources.list"
  # Read after the machine's apt configuration (so its proxy settings still apply): only this
  # sources list, lists and cache, in $tmp; none of the machine's pinning, nor the hooks it runs
  # after its own `apt-get update` (they would act on the machine's caches). Sandboxed as the
  # user running this, so root's apt does not warn that _apt cannot read $tmp.
  cat >"$tmp/apt.conf" <<EOF
Dir::Etc::SourceList "$tmp/sources.list";
Dir::Etc::SourceParts "/dev/null";
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts "/dev/null";
Dir::State::Lists "$tmp/lists";
Dir::Cache "$tmp/cache";
APT::Architecture "$arch";
#clear APT::Architectures;
APT::Architectures { "$arch"; };
#clear APT::Default-Release;
Acquire::Languages "none";
APT::Sandbox::User "$(id -un)";
#clear APT::Update::Pre-Invoke;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
EOF
  echo "Fetching nats-server from Debian $NATS_SERVER_DEBIAN_SUITE ($NATS_SERVER_DEBIAN_MIRROR) into $root/.cache" >&2
  if ! apt-get -c "$tmp/apt.conf" -qq update >"$tmp/log" 2>&1 \
    || ! (cd "$tmp" && apt-get -c "$tmp/apt.conf" -qq download "nats-server:$arch") >>"$tmp/log" 2>&1 \
    || ! deb=$(compgen -G "$tmp/nats-server_*.deb") \
    || ! dpkg-deb -x "$deb" "$tmp/unpacked" >>"$tmp/log" 2>&1; then
    echo "Could not fetch nats-server from Debian $NATS_SERVER_DEBIAN_SUITE:" >&2
    tail -5 "$tmp/log" >&2
    return 1
  fi
  version=$(nats_server_version "$tmp/unpacked/usr/sbin/nats-server")
  if ! version_at_least "$version" "$NATS_SERVER_MIN"; then
    echo "The nats-server of Debian $NATS_SERVER_DEBIAN_SUITE (${deb##*/}) reports '${version:-nothing: it does not run here}', not $NATS_SERVER_MIN or later." >&2
    return 1
  fi
  # Moved into place whole (a rename within .cache/), so an interrupted fetch never leaves a
  # directory that test/support/nats-binary.ts would take for a server. The package's
  # copyright file goes along with the binary.
  dir="$root/.cache/nats-server-$version"
  mkdir -p "$root/.cache"
  staging=$(mktemp -d "$root/.cache/.nats-server-XXXXXX")
  chmod 755 "$staging"
  mv "$tmp/unpacked/usr/sbin/nats-server" "$staging/nats-server"
  cp "$tmp/unpacked/usr/share/doc/nats-server/copyright" "$staging/" 2>/dev/null || true
  rm -rf "$dir"
  mv "$staging" "$dir"
  echo "Unpacked nats-server $version into $dir ($((SECONDS - started)) s)" >&2
  printf '%s\n' "$dir/nats-server"
)

ensure_nats_server() {
  local root have bin version best="" best_version="" arch
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  # A binary named by the user is taken as it is (and only checked).
  if [ -n "${NATS_SERVER_BIN:-}" ]; then
    bin=$(command -v "$NATS_SERVER_BIN") || bin=$NATS_SERVER_BIN
    case $bin in /*) ;; *) bin="$PWD/$bin" ;; esac
    NATS_SERVER_BIN=$bin
    have=$(nats_server_version "$NATS_SERVER_BIN")
    version_at_least "$have" "$NATS_SERVER_MIN" \
      || echo "Warning: NATS_SERVER_BIN=$NATS_SERVER_BIN is nats-server ${have:-(does not run)}, older than $NATS_SERVER_MIN: it can lose acknowledged messages when a cluster node fails." >&2
    export NATS_SERVER_BIN
    return 0
  fi
  have=$(nats_server_version)
  if version_at_least "$have" "$NATS_SERVER_MIN"; then
    NATS_SERVER_BIN=$(command -v nats-server)
    export NATS_SERVER_BIN
    return 0
  fi
  # The newest good one already unpacked (its version as it reports it, not as its folder says).
  for bin in "$root"/.cache/nats-server-*/nats-server; do
    version=$(nats_server_version "$bin")
    if version_at_least "$version" "$NATS_SERVER_MIN" && { [ -z "$best" ] || version_at_least "$version" "$best_version"; }; then
      best=$bin best_version=$version
    fi
  done
  if [ -z "$best" ]; then
    case "$(uname -s)-$(uname -m)" in
      Linux-x86_64) arch=amd64 ;;
      Linux-aarch64 | Linux-arm64) arch=arm64 ;;
      *) arch="" ;;
    esac
    if [ -n "$arch" ] && command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1; then
      best=$(fetch_nats_server "$root" "$arch") || best=""
    else
      echo "nats-server $NATS_SERVER_MIN or later is fetched from Debian's packages on amd64 or arm64 Linux with apt-get and dpkg-deb only; this is $(uname -s) $(uname -m)$(command -v apt-get >/dev/null 2>&1 || echo ', without apt-get')$(command -v dpkg-deb >/dev/null 2>&1 || echo ', without dpkg-deb')." >&2
    fi
  fi
  if [ -z "$best" ]; then
    echo "Warning: using this machine's nats-server ${have:-(none found)}, older than $NATS_SERVER_MIN: it can lose acknowledged messages when a cluster node fails. Install nats-server $NATS_SERVER_MIN or later (nats.io) first on PATH, or set NATS_SERVER_BIN." >&2
    if [ -n "$have" ]; then
      NATS_SERVER_BIN=$(command -v nats-server)
      export NATS_SERVER_BIN
    fi
    return 0
  fi
  NATS_SERVER_BIN=$best
  export NATS_SERVER_BIN
  export PATH="${best%/*}:$PATH"
  hash -r
  echo "Using nats-server $(nats_server_version "$best") from ${best%/*} (this machine's is ${have:-missing})" >&2
}
