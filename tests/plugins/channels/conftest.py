"""Fixtures for the channels tests (helpers live in channels_support.py)."""

from __future__ import annotations

from channels_support import account  # noqa: F401  (fixture)
