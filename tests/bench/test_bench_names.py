"""A bench script's folder comes first on ``sys.path`` when it runs: no bench module may take a
standard library module's name (``bench/collections.py`` hid ``collections`` from every bench
run by an interpreter that had not imported it yet, as a wheel's does)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_no_bench_module_shadows_the_standard_library() -> None:
    names = sorted(p.stem for p in BENCH.glob("*.py"))
    assert names, BENCH
    assert [n for n in names if n in sys.stdlib_module_names] == []
