"""The untyped JSON the channels meet, by name: a platform's webhook body, a stored node's
properties, a schedule entry, a delivery outcome. Everything else in the plugin has a real type, so
mypy sees its call sites; ``Any`` appears only through these aliases."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

JSON: TypeAlias = Any
"""A value decoded from JSON (a webhook body, one of its fields), of whatever shape the sender chose."""
JSONObject: TypeAlias = dict[str, Any]
"""A JSON object the plugin builds or reads: node properties, a webchat event, a schedule entry, a
delivery outcome (``{"ok": bool, ...}``), a platform API's request body."""
JSONMapping: TypeAlias = Mapping[str, Any]
"""A JSON object read only (a node's properties as stored, a reply's target)."""
