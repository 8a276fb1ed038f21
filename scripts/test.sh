#!/usr/bin/env bash
# Set up everything the tests need, then run the whole suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/install-tools.sh
.venv/bin/python -m ruff check host plugins tests bench
# mypy and lint-imports read the package as it installs (host/ is plughost, plugins/ is plughost.plugins):
# scripts/srctree.py links it out under .venv/srctree; both are configured in pyproject.toml.
TREE="$(.venv/bin/python scripts/srctree.py)"
(cd "$TREE" && ../bin/python -m mypy --config-file ../../pyproject.toml)
(cd "$TREE" && ../bin/lint-imports --no-cache ../../pyproject.toml)  # the rooms' layers, the public API, no cycles
.venv/bin/python -m vulture host plugins --min-confidence 80  # dead code: none in host/ or plugins/
# PLUGHOST_TEST_WORKERS workers (.ci/run: one more than the cores; 0 runs in one process); each
# worker's Neo4j tests use its own server when NEO4J_URIS names several (tests/backends.py). Every
# test runs, the end-to-end ones too; locally `bash scripts/test.sh -m "not e2e"` leaves those out.
exec .venv/bin/python -m pytest -q -n "${PLUGHOST_TEST_WORKERS:-auto}" --dist loadgroup "$@"
