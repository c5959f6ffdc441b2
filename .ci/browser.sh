#!/usr/bin/env bash
# Install the headless browser rac ui's browser tests drive: Debian's chromium and
# chromium-driver (same version, so Selenium needs nothing from the network). As root.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
echo "browser.sh: installing chromium and chromium-driver from the Debian packages" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y chromium chromium-driver >&2 || {
    apt-get update >&2
    apt-get install -y chromium chromium-driver >&2
}
