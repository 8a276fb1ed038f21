"""Times on log lines (docs/logs.md#times, docs/console.md): the log writer records each line's
write time beside server.log, never in it, and the console's logs page shows it in the server's
local time."""

from __future__ import annotations

import calendar
import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from plughost.plugins.admin import sessions
from plughost.util import log as log_module
from tests.support.serve_helpers import start_serve

PIN = "482913"
TZ = "XYZ-5:45"  # a POSIX zone, UTC+05:45 (no tz database needed): local time differs from UTC
OFFSET = 5 * 3600 + 45 * 60


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _raw(url: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    opener = urllib.request.build_opener(NoRedirect)
    req = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data is not None else "GET")
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def test_the_writer_records_each_lines_time_beside_the_log_not_in_it(plughost_home: Path) -> None:
    before = int(time.time())
    first = log_module.log("probe", "op=one", n=1)
    second = log_module.emit("[probe] op=two")
    after = int(time.time())
    data = (plughost_home / "logs" / "server.log").read_bytes()
    assert data.decode().splitlines()[-2:] == [first, second] == ["[probe] op=one n=1", "[probe] op=two"]
    entries = (plughost_home / "logs" / log_module.TIMES_NAME).read_text().splitlines()[-2:]
    for entry, line in zip(entries, (first, second), strict=True):
        offset, length, stamp = entry.split(" ")
        assert data[int(offset):int(offset) + int(length)] == (line + "\n").encode()
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp)
        assert before <= calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")) <= after + 1
    assert oct((plughost_home / "logs" / log_module.TIMES_NAME).stat().st_mode & 0o777) == "0o600"


@pytest.fixture
def console(plughost_home: Path, serve_env: dict[str, str]) -> Any:
    sessions.set_pin(plughost_home, serve_env["ACCOUNT_ID"], PIN, "owner")
    server = start_serve(env={**serve_env, "TZ": TZ})
    yield server
    server.terminate()


def test_the_logs_page_shows_each_lines_time(console, plughost_home: Path) -> None:
    """A line the server wrote shows its time (HH:MM:SS, local); an older one its date too; a line
    with no recorded time (written by another hand) shows none; the lines themselves are unchanged."""
    base = console.base
    logs = plughost_home / "logs"
    old = "2020-02-03T04:05:06Z"  # 09:50:06 at UTC+05:45
    line = b"[probe] op=old\n"
    with (logs / "server.log").open("ab") as fh:
        fh.write(b"[probe] op=no-time\n")
        start = fh.tell()
        fh.write(line)
    with (logs / log_module.TIMES_NAME).open("a") as fh:
        fh.write(f"{start} {len(line)} {old}\n")
    status, headers, _ = _raw(f"{base}/admin/login", b"pin=" + PIN.encode() + b"&next=/admin")
    assert status == 303
    cookie = {"Cookie": headers["set-cookie"].split(";", 1)[0]}
    status, _, body = _raw(f"{base}/admin/logs", headers=cookie)
    assert status == 200
    items = re.findall(r"<li>(.*?)</li>", body)
    [login] = [item for item in items if "[console] op=login" in item]
    stamp, shown = re.search(r'<time class="muted" datetime="([^"]+)">([^<]+)</time>', login).groups()  # type: ignore[union-attr]
    written = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    assert abs(written - time.time()) < 120
    local = time.gmtime(written + OFFSET)
    expected = time.strftime("%H:%M:%S", local)
    if time.strftime("%Y-%m-%d", local) != time.strftime("%Y-%m-%d", time.gmtime(time.time() + OFFSET)):
        expected = time.strftime("%Y-%m-%d ", local) + expected  # the test ran across the server's midnight
    assert shown == expected
    assert '<time class="muted" datetime="2020-02-03T04:05:06Z">2020-02-03 09:50:06</time> <code>[probe] op=old</code>' in items
    assert "<code>[probe] op=no-time</code>" in items
    assert "op=login" in (logs / "server.log").read_text()
    assert not any(" at=" in line for line in (logs / "server.log").read_text().splitlines())
