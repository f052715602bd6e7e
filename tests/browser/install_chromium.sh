#!/bin/sh
# Installs Debian's headless Chromium and its driver for the browser tests (tests/test_ui_browser.py).
# Idempotent and quick when they are present; needs root (CI) or sudo, and Debian's mirrors.
set -eu
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = "0" ]; then SUDO=""; else SUDO="sudo -n"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
command -v chromium >/dev/null && command -v chromedriver >/dev/null
