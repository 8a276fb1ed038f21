#!/usr/bin/env python3
"""Print how many tests pytest collects and how many assertions the test files hold.

Assertions are counted with ``ast`` over every ``tests/**/test_*.py``: each ``assert`` statement
and each ``pytest.raises(...)`` call (as a context manager or called directly). Helper modules
(conftest.py, tests/support/) are counted on a line of their own. Run from anywhere:

    .venv/bin/python scripts/count_tests.py
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _is_raises(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr == "raises" and isinstance(func.value, ast.Name) and func.value.id == "pytest"
    return isinstance(func, ast.Name) and func.id == "raises"


def count_assertions(path: Path) -> tuple[int, int]:
    """``(assert statements, pytest.raises calls)`` in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    asserts = raises = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            asserts += 1
        elif isinstance(node, ast.Call) and _is_raises(node):
            raises += 1
    return asserts, raises


def collected_tests() -> int:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly"],
                          cwd=REPO, capture_output=True, text=True)
    match = re.search(r"(\d+) tests? collected", proc.stdout) or re.search(r"^(\d+) tests?", proc.stdout, re.M)
    if proc.returncode != 0 or not match:
        sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-2000:])
        raise SystemExit(f"count_tests: collection failed (exit {proc.returncode})")
    return int(match.group(1))


def main() -> int:
    tests_dir = REPO / "tests"
    files = sorted(tests_dir.rglob("test_*.py"))
    helpers = sorted(p for p in tests_dir.rglob("*.py") if p not in set(files))
    asserts = raises = 0
    for path in files:
        a, r = count_assertions(path)
        asserts, raises = asserts + a, raises + r
    h_asserts = h_raises = 0
    for path in helpers:
        a, r = count_assertions(path)
        h_asserts, h_raises = h_asserts + a, h_raises + r
    print(f"tests collected: {collected_tests()}")
    print(f"assertions in {len(files)} test files: {asserts + raises} ({asserts} assert, {raises} pytest.raises)")
    print(f"assertions in {len(helpers)} helper files: {h_asserts + h_raises} ({h_asserts} assert, {h_raises} pytest.raises)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
