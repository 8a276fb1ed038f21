"""Fixtures for the robustness tests: no `plughost serve` outlives its test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from robust_support import stop_all


@pytest.fixture(autouse=True)
def no_leftover_servers() -> Iterator[None]:
    yield
    stop_all()
