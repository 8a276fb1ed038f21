"""Fixtures for the boot-gate tests (helpers live in gates_support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gates_support import Install


@pytest.fixture
def install(tmp_path: Path, plughost_home: Path) -> Install:
    inst = Install(root=tmp_path, home=plughost_home)
    inst.plugins.mkdir(parents=True)
    inst.account("acme")
    return inst
