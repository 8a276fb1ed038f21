#!/usr/bin/env bash
# Install the external validators the test suite runs (docs/testing.md#external-checks) into .tools/ (npm packages
# only; nothing global). Idempotent: skips when the pinned versions are already there.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${PLUGHOST_TOOLS_DIR:-.tools}
if [ -L "$TOOLS" ]; then
  exit 0  # a developer's shared tools folder: managed by hand
fi
if [ -f "$TOOLS/.complete" ] && cmp -s scripts/tools-package.json "$TOOLS/package.json"; then
  exit 0
fi
mkdir -p "$TOOLS"
cp scripts/tools-package.json "$TOOLS/package.json"
(cd "$TOOLS" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
touch "$TOOLS/.complete"
