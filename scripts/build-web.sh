#!/usr/bin/env bash
# Builds the dashboard and the web chat into build/assets, which the Worker
# serves as static assets (outside the Worker's own bundle). Run by `make build`.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/assets
rm -rf "$out"
mkdir -p "$out"
cp -R web/static/. "$out/"
esbuild web/src/dashboard.tsx web/src/chat.tsx --bundle --minify --format=esm --target=es2022 \
  --jsx=automatic --jsx-import-source=preact --entry-names='[name]/app' --outdir="$out" --log-level=warning
