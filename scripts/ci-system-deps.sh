#!/usr/bin/env bash
# System packages the test suite needs on a fresh machine (Debian). Skips what is present.
set -euo pipefail
PACKAGES=(chromium)  # the webchat page is tested in headless Chromium
need=()
for pkg in "${PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
