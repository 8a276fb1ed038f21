"""Conversation-search fixtures."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from conversation_support import open_store  # noqa: E402


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Any]:
    s = open_store(tmp_path / "graph.sqlite")
    yield s
    s.close()
