#!/usr/bin/env bash
# Set up everything the tests need, then run the whole suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/install-tools.sh
.venv/bin/python -m ruff check host plugins tests bench
.venv/bin/python -m mypy  # host/ and plugins/, configured in pyproject.toml
exec .venv/bin/python -m pytest -q "$@"
