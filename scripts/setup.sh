#!/usr/bin/env bash
# Set up a development environment from a fresh clone: a virtualenv with plughost (editable),
# its test/embedding extras. Idempotent; safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.plughost-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "==> setup: a virtualenv in .venv with plughost and its dependencies (the first time takes a minute or two)"
  # pip's own chatter (build-backend warnings) goes to a log; a failure shows its tail
  if ! { .venv/bin/python -m pip install -q --upgrade pip && .venv/bin/python -m pip install -q -e '.[dev,embed]'; } \
      >.venv/setup.log 2>&1; then
    echo "setup: pip install failed; the last lines of .venv/setup.log:" >&2
    tail -n 20 .venv/setup.log >&2
    exit 1
  fi
  touch "$stamp"
fi
