#!/usr/bin/env bash
# Prints the Slack app manifest (scripts/slack-manifest.yaml) with the Worker's URL
# filled in: `make slack-manifest URL=https://edgebot.<you>.workers.dev`.
set -euo pipefail
url=${1:-}
url=${url%/}
if [[ ! $url =~ ^https?://[^[:space:]]+$ ]]; then
  echo "usage: make slack-manifest URL=https://edgebot.<your-subdomain>.workers.dev" >&2
  exit 2
fi
manifest=$(<"$(dirname "$0")/slack-manifest.yaml")
printf '%s\n' "${manifest//'${WORKER_URL}'/$url}"
