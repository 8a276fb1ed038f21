#!/usr/bin/env bash
# The main job on the embedded defaults (no servers to install): set up, then show the plugins
# and run the boot gates against a local demo install.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PLUGHOST_HOME=${PLUGHOST_HOME:-$PWD/.plughost-demo}
.venv/bin/plughost plugins list
