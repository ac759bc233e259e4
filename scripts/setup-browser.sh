#!/usr/bin/env bash
# Installs what the end-to-end tests need beyond the Worker's own tools, when
# missing: Debian's Chromium and its ChromeDriver (/usr/bin/chromium,
# /usr/bin/chromedriver) for the browser tests, and the sqlite3 shell, with
# which a test takes alarms out of the local runtime's state (a dropped alarm).
# Run by `make test`.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] && command -v sqlite3 >/dev/null; then
  exit 0
fi
echo "setup: installing Debian's chromium, chromium-driver and sqlite3 (end-to-end tests)"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver sqlite3 >/dev/null
