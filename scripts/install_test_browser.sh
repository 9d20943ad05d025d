#!/usr/bin/env bash
# Install Debian's Chromium for the console's browser tests (tests/integration/test_web_console.py).
#
# Playwright for Python (a dev dependency in .venv) drives it as /usr/bin/chromium;
# Playwright's own browser download is never used. Idempotent: returns at once when
# Chromium is there. Where it cannot install (not root, no apt-get, apt-get fails)
# it says so and exits 0; the browser tests then skip, naming the reason.
set -euo pipefail

if [[ -x /usr/bin/chromium ]]; then
    exit 0
fi
if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "Chromium is missing and needs root and apt-get to install" \
        "(apt-get install chromium); the console's browser tests will skip." >&2
    exit 0
fi
echo "Installing Debian's chromium for the console's browser tests..." >&2
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; then
    echo "apt-get could not install chromium; the console's browser tests will skip." >&2
    exit 0
fi
/usr/bin/chromium --version >&2
