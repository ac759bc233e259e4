#!/usr/bin/env bash
# Builds the dashboard and the web chat into build/assets, which the Worker
# serves as static assets (outside the Worker's own bundle). Run by `make build`.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/assets
rm -rf "$out"
mkdir -p "$out"
cp -R web/static/. "$out/"
common=(--bundle --minify --format=esm --target=es2022 --jsx=automatic --jsx-import-source=preact
  --entry-names='[name]/app' --outdir="$out" --log-level=warning)
esbuild web/src/chat.tsx "${common[@]}"
# --splitting: what the dashboard loads on demand (the identity page's Markdown
# renderer and sanitizer) is a chunk of its own under chunks/, outside the first load.
esbuild web/src/dashboard.tsx "${common[@]}" --splitting --chunk-names='chunks/[name]-[hash]'
