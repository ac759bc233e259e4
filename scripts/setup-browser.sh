#!/usr/bin/env bash
# Installs what the end-to-end tests need beyond the Worker's own tools, when
# missing: Debian's Chromium and its ChromeDriver (/usr/bin/chromium,
# /usr/bin/chromedriver) for the browser tests, and the sqlite3 shell, with
# which a test takes alarms out of the local runtime's state (a dropped alarm).
# Then points wrangler's local Browser Rendering (the BROWSER binding) at that
# Chromium, since it cannot download its own Chrome offline (docs/browse.md).
# Run by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] && command -v sqlite3 >/dev/null; }; then
  echo "setup: installing Debian's chromium, chromium-driver and sqlite3 (end-to-end tests)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver sqlite3 >/dev/null
fi

# miniflare launches Chrome for Testing <version> from wrangler's cache,
# <cache>/chrome/linux-<version>/chrome-linux64/chrome, and downloads it only when
# that folder is missing (@puppeteer/browsers' install()). A script there that runs
# Debian's chromium stands in for it. --no-sandbox: Chromium's sandbox cannot start
# as root, which these machines are (miniflare adds it itself only when CI is set).
miniflare=node_modules/miniflare/dist/src/index.js
if [ ! -f "$miniflare" ]; then
  echo "setup-browser: $miniflare is missing; run scripts/setup.sh (npm ci) first" >&2
  exit 1
fi
version=$(grep -oP 'var BROWSER_VERSION = "\K[0-9.]+' "$miniflare" | head -n1)
if [ -z "$version" ]; then
  echo "setup-browser: no BROWSER_VERSION in $miniflare (has miniflare changed how it finds Chrome?)" >&2
  exit 1
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/.wrangler/chrome/linux-$version/chrome-linux64"
wrapper="$cache/chrome"
if ! grep -qs "edgebot" "$wrapper"; then
  mkdir -p "$cache"
  cat >"$wrapper" <<'SCRIPT'
#!/bin/sh
# edgebot (scripts/setup-browser.sh): wrangler's local Browser Rendering runs Debian's chromium.
exec /usr/bin/chromium --no-sandbox "$@"
SCRIPT
  chmod +x "$wrapper"
  echo "setup-browser: wrangler's local Browser Rendering will run /usr/bin/chromium ($wrapper)"
fi
