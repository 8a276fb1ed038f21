"""`POST /api/admin/log-ingest` over real HTTP: loopback peer and X-Forwarded-For rules (docs/http.md#log-ingest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from serve_helpers import non_loopback_address, raw_request

ROUTE = "/api/admin/log-ingest"


def server_log(home: Path) -> str:
    path = home / "logs" / "server.log"
    return path.read_text() if path.exists() else ""


def test_loopback_line_is_appended(live_app, plughost_home: Path) -> None:
    server = live_app()
    response = server.post_json(ROUTE, {"line": "[recorder-turn] sessionId=s1 turnIndex=0 text=\"hi there\""})
    assert response.status == 200 and response.json() == {"ok": True, "appended": 1}
    assert "[recorder-turn] sessionId=s1 turnIndex=0 text=\"hi there\"\n" in server_log(plughost_home)
    batch = server.post_json(ROUTE, {"lines": ["[mcp:memory] memory-write result=ok", "[x] two"]})
    assert batch.json()["appended"] == 2
    assert "[mcp:memory] memory-write result=ok\n[x] two\n" in server_log(plughost_home)


@pytest.mark.parametrize("forwarded", [
    "127.0.0.1", "127.0.0.1, ::1", "::1", "127.8.9.10", "::ffff:127.0.0.1", "[::1]:4711", "127.0.0.1:5000",
])
def test_loopback_forwarded_chain_is_accepted(live_app, forwarded: str) -> None:
    response = live_app().post_json(ROUTE, {"line": "[ok] forwarded"}, headers={"X-Forwarded-For": forwarded})
    assert response.status == 200, forwarded


@pytest.mark.parametrize("headers", [
    {"X-Forwarded-For": "10.0.0.1"},
    {"X-Forwarded-For": "127.0.0.1, 10.0.0.1"},
    {"X-Forwarded-For": "192.168.1.20, 127.0.0.1"},
    {"X-Forwarded-For": "unknown"},
    {"X-Forwarded-For": ""},
    {"X-Forwarded-For": "127.0.0.1,"},
    {"X-Forwarded-For": "localhost"},
    {"X-Forwarded-For": "::ffff:10.0.0.1"},
    {"X-Forwarded-For": "2001:db8::1"},
    {"Forwarded": "for=192.0.2.60;proto=http"},
    {"Forwarded": "for=127.0.0.1, for=198.51.100.17"},
    {"X-Real-IP": "203.0.113.9"},
])
def test_non_loopback_forwarded_is_refused(live_app, plughost_home: Path, headers: dict[str, str]) -> None:
    before = server_log(plughost_home)
    response = live_app().post_json(ROUTE, {"line": "[forged] recorder-session-init"}, headers=headers)
    assert response.status == 403, headers
    assert response.json() == {"error": "forbidden", "detail": "log-ingest accepts loopback requests only"}
    after = server_log(plughost_home)
    assert "[forged]" not in after
    assert "[log-ingest] rejected reason=non-loopback-forwarded" in after[len(before):]


@pytest.mark.parametrize("host, origin, reason", [
    ("evil.example", None, "non-loopback-host"),
    ("192.0.2.10", None, "non-loopback-host"),
    ("127.0.0.1", "http://evil.example", "cross-origin"),
    ("localhost", "null", "cross-origin"),
])
def test_dns_rebinding_browser_requests_are_refused(live_app, plughost_home: Path, host: str,
                                                     origin: str | None, reason: str) -> None:
    server = live_app()
    headers = {"Content-Type": "application/json", **server.auth, **({"Origin": origin} if origin else {})}
    response = raw_request(server.port, ROUTE, method="POST", headers=headers, host=host,
                           body=b'{"line": "[forged] via a rebinding page"}')
    assert response.status == 403
    log = server_log(plughost_home)
    assert "[forged]" not in log and f"[log-ingest] rejected reason={reason}" in log


def test_loopback_origin_and_host_names_are_accepted(live_app) -> None:
    server = live_app()
    for host, origin in (("localhost", "http://localhost:3000"), ("[::1]", "http://[::1]:8787"),
                         ("127.0.0.1", "http://127.0.0.1")):
        response = raw_request(server.port, ROUTE, method="POST", host=host,
                               headers={"Content-Type": "application/json", "Origin": origin, **server.auth},
                               body=b'{"line": "[ok] local page"}')
        assert response.status == 200, (host, origin)


def test_two_forwarded_headers_are_all_checked(live_app) -> None:
    server = live_app()
    body = json.dumps({"line": "[forged] x"}).encode()
    raw = (f"POST {ROUTE} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nConnection: close\r\n"
           "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-For: 10.1.2.3\r\nContent-Type: application/json\r\n"
           f"Authorization: {server.auth['Authorization']}\r\n"
           f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    import socket

    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(raw)
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 403")


def test_non_loopback_peer_is_refused(live_app, plughost_home: Path) -> None:
    address = non_loopback_address()
    if address is None:
        pytest.skip("no non-loopback IPv4 address on this machine")
    server = live_app(bind="0.0.0.0")
    response = raw_request(server.port, ROUTE, method="POST", headers={"Content-Type": "application/json", **server.auth},
                           body=b'{"line": "[forged] from the LAN"}', connect=address)
    assert response.status == 403
    log = server_log(plughost_home)
    assert "[forged]" not in log
    assert f"[log-ingest] rejected reason=non-loopback-peer peer={address}" in log
    # the same server accepts its loopback peer
    assert server.post_json(ROUTE, {"line": "[ok] loopback"}).status == 200


@pytest.mark.parametrize("body, detail", [
    (b"not json", "body: expected JSON"),
    (b"[]", "body: expected an object with 'line'"),
    (b'{"line": 5}', "body.line: expected a non-empty string"),
    (b'{"line": "a\\nb"}', "body.line: must be a single line"),
    (b'{"line": "a\\rb"}', "body.line: must be a single line"),
    (b'{"lines": ["ok", "bad\\u0000"]}', "body.lines[1]: must be a single line"),
    (b'{"lines": []}', "body.lines: expected 1 to 200 strings"),
    (b'{"line": "x", "extra": 1}', "body.extra: unknown field"),
])
def test_bad_bodies_are_400_and_nothing_is_written(live_app, plughost_home: Path, body: bytes, detail: str) -> None:
    server = live_app()
    before = server_log(plughost_home)
    response = raw_request(server.port, ROUTE, method="POST", headers={"Content-Type": "application/json", **server.auth},
                           body=body)
    assert response.status == 400
    assert response.json()["error"] == "bad-request"
    assert response.json()["detail"].startswith(detail)
    assert server_log(plughost_home) == before


def test_oversized_body_is_413(live_app) -> None:
    server = live_app()
    response = server.post_json(ROUTE, {"lines": ["x" * 8000] * 10})
    assert response.status == 413
    assert response.json()["error"] == "payload-too-large"


def test_get_is_405(live_app) -> None:
    server = live_app()
    assert server.get(ROUTE, headers=server.auth).status == 405
