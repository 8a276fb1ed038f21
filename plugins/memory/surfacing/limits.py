"""The surfacing budget and limit as a surfacing call reads them (docs/memory.md#surfacing): its value,
or its default and what is wrong with the value given.

One reading for the prompt-time call (:mod:`.core`) and the ``surface-settings`` boot gate
(:mod:`.settings_gate`); a leaf, so the gate loads none of the surfacing machinery.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plughost import Setting
from plughost.plugins.memory.settings import SURFACE_BUDGET, SURFACE_LIMIT

SETTINGS = (SURFACE_BUDGET, SURFACE_LIMIT)
"""The hook sends its own values with each request (``budget``, ``limit``), so ``serve`` answers
with the hook's settings, as the cold path does."""


def setting(env: Mapping[str, str], which: Setting[int]) -> tuple[int, str | None]:
    """One of :data:`SETTINGS`: its value, or its default and the problem (an out-of-range or
    non-integer value must not turn surfacing off)."""
    problem = which.problem(env)
    return (which.default, problem) if problem is not None else (which.read(env), None)


def expected_range(which: Setting[Any]) -> str:
    """``200..100000``: what the ``bad-setting`` line says was expected."""
    return f"{which.minimum:g}..{which.maximum:g}"
