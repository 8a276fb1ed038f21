"""``plughost.util.times``: the one reader of ISO 8601 times (tool arguments, commands, stored records)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from plughost.util.errors import UserError
from plughost.util.times import parse_time, read_time


def test_z_offsets_and_naive_times() -> None:
    assert read_time("2026-12-01T09:00:00Z") == datetime(2026, 12, 1, 9, tzinfo=UTC)
    assert read_time("2026-12-01T09:00:00") == datetime(2026, 12, 1, 9, tzinfo=UTC)  # no offset: UTC
    plus2 = read_time("2026-12-01T11:00:00+02:00")
    assert plus2 == datetime(2026, 12, 1, 9, tzinfo=UTC) and plus2.utcoffset() == timedelta(hours=2)
    assert plus2.tzinfo == timezone(timedelta(hours=2))


@pytest.mark.parametrize("value", ["yesterday", "", None, "2026-13-01"])
def test_what_is_not_a_time(value) -> None:
    assert read_time(value) is None
    with pytest.raises(UserError, match=r"^since: expected an ISO 8601 time such as 2026-12-01T09:00:00Z \(got "):
        parse_time(value, "since")
