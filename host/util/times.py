"""ISO 8601 times as plughost reads them from tool arguments, commands and stored records.

``Z`` or a numeric offset; a time that names no offset is UTC. Every reader of a time goes
through here, so a tool, a command and a stored value accept the same spellings.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from plughost.util.errors import UserError

EXAMPLE = "2026-12-01T09:00:00Z"


def read_time(value: Any) -> datetime | None:
    """``value`` as an aware datetime (UTC when it names no offset), None when it is not a time."""
    try:
        at = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def parse_time(value: Any, what: str) -> datetime:
    """:func:`read_time`, or a one-line UserError naming the parameter ``what``."""
    at = read_time(value)
    if at is None:
        raise UserError(f"{what}: expected an ISO 8601 time such as {EXAMPLE} (got {str(value)!r:.40})")
    return at
