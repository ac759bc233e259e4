#!/usr/bin/env bash
# Installs what the browser tests need, when missing: Debian's Chromium and its
# ChromeDriver (/usr/bin/chromium, /usr/bin/chromedriver). Run by `make test`.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi
echo "setup: installing Debian's chromium and chromium-driver (browser tests)"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >/dev/null
