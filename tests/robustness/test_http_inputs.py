"""No input is a 500 or a traceback (docs/http.md#errors), against one real `plughost serve`: the cases found by
hand (Unicode digits, 5,000-digit cursors, 100,000-deep JSON, 1e20 dates, 30-digit timestamps, lone
surrogates, 10 MB bodies), log lines that try to forge lines or drive a terminal, and a hypothesis
fuzz pass over every route's parameters, headers and bodies.

The server runs on each backend (Neo4j when NEO4J_URI is set): what reaches the store (platform
ids, senders, texts, reply targets) must reach Neo4j's driver well formed too. On Neo4j only the
cases that reach the store run, with :data:`NEO4J_EXAMPLES` fuzz examples per test."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from channels_support import (
    FakeApis,
    serve,
    telegram_update,
    wa_signed,
    whatsapp_payload,
    write_account,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from robust_support import serve_env
from serve_helpers import FIXTURES, start_serve

from tests.backends import BACKENDS

TG = {"X-Telegram-Bot-Api-Secret-Token": "tg-secret"}
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
NEO4J_EXAMPLES = 8
"""Fuzz examples per test on Neo4j (each is a few round trips to the database; CI stays lean)."""
HOSTILE = ["²", "٣", "9" * 5000, "-1", "1e20", "0x10", " 1", "\ud800", "\udfff", "\u2028", "\x00", "", "%00",
           "../../etc/passwd", "a" * 10_000, "NaN", "🙂", "\x1b[31m"]


def fuzz(server: Server, body: Any) -> None:
    """``body(server, data)`` under hypothesis: :data:`FUZZ`'s examples, :data:`NEO4J_EXAMPLES` on Neo4j."""
    examples = NEO4J_EXAMPLES if server.backend == "neo4j" else FUZZ.max_examples

    @settings(FUZZ, max_examples=examples)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        body(server, data)

    run()


class Server:
    def __init__(self, served: Any, home: Path, token: str, backend: str = "sqlite") -> None:
        self.served, self.home, self.token, self.backend = served, home, token, backend
        self.base = served.base
        self.client = httpx.Client(base_url=self.base, timeout=30)
        self.statuses: list[tuple[int, str]] = []

    def messages(self) -> list[Any]:
        """Every Message of the account, read from the server's store by a fresh host (the oracle)."""
        from robust_support import store_messages

        return store_messages(self.home, self.backend)

    def front_door_only(self) -> None:
        """Skip on Neo4j: the case never reaches the store (the embedded run covers it)."""
        if self.backend == "neo4j":
            pytest.skip("front door only: runs on the embedded store")

    @staticmethod
    def _url(path: str, kw: dict[str, Any]) -> str:
        """The path with ``params`` percent-encoded from raw bytes (lone surrogates become invalid UTF-8)."""
        from urllib.parse import quote

        params = kw.pop("params", None)
        if not params:
            return path
        enc = [f"{quote(str(k).encode('utf-8', 'surrogatepass'), safe='')}="
               f"{quote(str(v).encode('utf-8', 'surrogatepass'), safe='')}" for k, v in params.items()]
        return path + "?" + "&".join(enc)

    @staticmethod
    def _raw_headers(kw: dict[str, Any]) -> dict[str, Any]:
        if kw.get("headers"):
            kw["headers"] = {k: v.encode("utf-8", "surrogatepass") if isinstance(v, str) and not v.isascii() else v
                             for k, v in kw["headers"].items()}  # sent as bytes, as a hostile client would
        return kw

    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        url = self._url(path, kw)
        r = self.client.request(method, url, **self._raw_headers(kw))
        self.statuses.append((r.status_code, f"{method} {path}"))
        assert r.status_code < 500, (method, path, r.status_code, r.text[:300], kw.get("params"))
        if r.status_code >= 400 and r.headers.get("content-type", "").startswith("application/json"):
            body = r.json()
            expected = {"error"} if path.startswith("/mcp/") else {"error", "detail"}  # MCP answers JSON-RPC errors
            assert set(body) >= expected, body
        return r

    def stream_status(self, path: str, **kw: Any) -> int:
        url = self._url(path, kw)
        with self.client.stream("GET", url, timeout=httpx.Timeout(30), **self._raw_headers(kw)) as r:
            status = r.status_code
        self.statuses.append((status, f"GET {path}"))
        assert status < 500, (path, status, kw)
        return status


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("inputs-home")
    tmp = tmp_path_factory.mktemp("inputs-tmp")
    write_account(home)
    fake = FakeApis()
    if request.param == "neo4j":
        _wipe_neo4j()
    with serve(fake.app()) as api_base:
        env = serve_env(home, tmp, api_base, fake, backend=request.param)
        served = start_serve(env=env, plugins_dir=FIXTURES / "ok")  # module-wide: not in STARTED (per test)
        token = (home / "accounts" / "acct-0001" / "credentials" / "http-token").read_text().strip()
        s = Server(served, home, token, request.param)
        yield s
        s.client.close()
        try:
            code, _, err = served.terminate()
        finally:
            if served.proc.poll() is None:
                served.proc.kill()
        if request.param == "neo4j":
            _wipe_neo4j()
        assert code == 0
        assert "Traceback" not in err, err[err.find("Traceback"):][:3000]


def _wipe_neo4j() -> None:
    from plughost.plugins.graph.neo4j_store import Neo4jStore
    from tests.backends import neo4j_env

    store = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": "acct-0001"})
    try:
        store.wipe_account("acct-0001")
    finally:
        store.close()


# ------------------------------------------------------------------------------ the cases found by hand
@pytest.mark.parametrize("params, headers", [
    ({"after": "²"}, {}), ({"after": "9" * 5000}, {}), ({"wait": "9" * 5000}, {}), ({"wait": "²"}, {}),
    ({}, {"Last-Event-ID": "9" * 5000}), ({}, {"Last-Event-ID": "²"}), ({"after": "-1"}, {}),
])
def test_webchat_cursors_are_400_not_500(server: Server, params: dict, headers: dict) -> None:
    server.front_door_only()
    r = server.request("GET", "/channels/webchat/messages", params={"session": "abcdefgh1234", **params},
                       headers=headers)
    assert r.status_code == 400 and r.json()["error"].startswith("invalid-")
    if "wait" not in params:  # the stream takes no wait
        assert server.stream_status("/channels/webchat/stream", params={"session": "abcdefgh1234", **params},
                                    headers=headers) == 400


@pytest.mark.parametrize("depth", [30_000, 100_000])
def test_deep_json_is_400_or_413(server: Server, depth: int) -> None:
    server.front_door_only()
    deep = b"[" * depth + b"]" * depth
    for path, headers in (("/channels/webchat/messages", {}), ("/channels/telegram/webhook", TG)):
        r = server.request("POST", path, content=deep, headers={"Content-Type": "application/json", **headers})
        assert r.status_code in (400, 413), (path, r.text)
    raw, headers = wa_signed({"entry": []})
    raw = b'{"entry": ' + deep + b"}"
    import hashlib
    import hmac

    sig = "sha256=" + hmac.new(b"wa-app-secret", raw, hashlib.sha256).hexdigest()
    r = server.request("POST", "/channels/whatsapp/webhook", content=raw,
                       headers={"X-Hub-Signature-256": sig, "Content-Type": "application/json"})
    assert r.status_code == 400
    auth = {"Authorization": f"Bearer {server.token}"}
    r = server.request("POST", "/api/admin/log-ingest", content=b'{"line": ' + deep[:60_000] + b"}",
                       headers={"Content-Type": "application/json", **auth})
    assert r.status_code in (400, 413)
    r = server.request("POST", "/api/admin/session", content=deep[:4000], headers={"Content-Type": "application/json"})
    assert r.status_code == 400


def test_telegram_dates_and_whatsapp_timestamps_out_of_range(server: Server) -> None:
    for date in (1e20, 10**20, -5, "1764464400", True, 10**400):
        update = telegram_update(71, 1, "when?")
        update["message"]["date"] = date
        r = server.request("POST", "/channels/telegram/webhook", content=json.dumps(update), headers=TG)
        assert r.status_code == 200, (date, r.text)
    for i, stamp in enumerate(("9" * 30, "²", 1e20, "-1", "")):
        payload = whatsapp_payload("447700900111", f"wamid.TS{i}", "when?")
        payload["entry"][0]["changes"][0]["value"]["messages"][0]["timestamp"] = stamp
        raw, headers = wa_signed(payload)
        assert server.request("POST", "/channels/whatsapp/webhook", content=raw, headers=headers).status_code == 200


def test_lone_surrogates_in_platform_message_ids_are_accepted(server: Server) -> None:
    """The webchat client ``id`` and WhatsApp's message id feed the deterministic Message id hash."""
    body = '{"session": "surrogate1234", "text": "hi", "id": "\\ud800x"}'
    r = server.request("POST", "/channels/webchat/messages", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 202, r.text
    again = server.request("POST", "/channels/webchat/messages", content=body,
                           headers={"Content-Type": "application/json"})
    minted = {"visitor"}  # a message bringing no visitor token gets a fresh one each time
    assert {k: v for k, v in again.json().items() if k not in minted} == \
        {**{k: v for k, v in r.json().items() if k not in minted}, "duplicate": True}
    raw, headers = wa_signed(whatsapp_payload("447700900111", "wamid.\ud800", "hi"))
    assert server.request("POST", "/channels/whatsapp/webhook", content=raw, headers=headers).status_code == 200
    # the sender, the text, the quoted id and the profile name too: every string the intake stores
    payload = whatsapp_payload("4477009\udfff", "wamid.S\udc00", "te\ud83dxt", context_id="wamid.\ud800q")
    payload["entry"][0]["changes"][0]["value"]["contacts"][0]["profile"]["name"] = "S\ud800m"
    raw, headers = wa_signed(payload)
    assert server.request("POST", "/channels/whatsapp/webhook", content=raw, headers=headers).status_code == 200
    body = '{"session": "surrogate5678", "text": "h\\udfffi", "id": "\\udc00"}'
    r = server.request("POST", "/channels/webchat/messages", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 202, r.text
    # the oracle: each of them stored, every stored string well formed
    deadline = time.monotonic() + 30
    while True:
        stored = [m for m in server.messages() if m.properties.get("role") == "user"]
        texts = {m.properties.get("text") for m in stored}
        if {"te\ufffdxt", "h\ufffdi"} <= texts or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert {"te\ufffdxt", "h\ufffdi"} <= texts, texts
    for m in stored:
        assert _well_formed(m.properties), m.properties


def _well_formed(value: Any) -> bool:
    if isinstance(value, str):
        return not any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return all(_well_formed(k) and _well_formed(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_well_formed(v) for v in value)
    return True


def test_a_client_hanging_up_mid_body_is_no_traceback(server: Server) -> None:
    """Half a declared body, then a closed socket: logged as one line (the fixture asserts no Traceback)."""
    server.front_door_only()
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(server.base)
    for path in ("/channels/webchat/messages", "/api/admin/session"):
        with socket.create_connection((url.hostname, url.port), timeout=5) as sock:
            sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
                         "Content-Length: 1000\r\n\r\n{\"text\": \"hal".encode())
        time.sleep(0.3)
    assert server.request("GET", "/healthz").status_code == 200
    def err() -> str:
        return server.served.stderr_path.read_text(errors="replace")

    deadline = time.monotonic() + 60  # a hang guard: the lines come as soon as the server reads the closed sockets
    while err().count("op=client-disconnect") < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert err().count("op=client-disconnect") == 2 and "Traceback" not in err(), err()[-3000:]


def test_ten_megabyte_bodies_are_413_on_every_route(server: Server) -> None:
    server.front_door_only()
    big = b"x" * (10 * 1024 * 1024)
    auth = {"Authorization": f"Bearer {server.token}"}
    for path, headers in (("/channels/webchat/messages", {}), ("/channels/telegram/webhook", TG),
                          ("/channels/whatsapp/webhook", {}), ("/api/admin/session", {}),
                          ("/api/admin/log-ingest", auth), ("/mcp/probe", auth), ("/healthz", {}),
                          ("/sites/x", {}), ("/nowhere", {})):
        r = server.request("POST", path, content=big, headers=headers)
        assert r.status_code in (405, 413), (path, r.status_code)  # a route without POST may say 405 first
        if path.startswith(("/channels/", "/api/", "/mcp/")):
            assert r.status_code == 413, path

        def chunks() -> Iterator[bytes]:
            for _ in range(10):
                yield b"y" * (1024 * 1024)

        if path.startswith(("/channels/", "/api/")):  # without Content-Length: cut while reading
            r = server.request("POST", path, content=chunks(), headers=headers)
            assert r.status_code == 413, path


def test_log_lines_cannot_forge_lines_or_drive_a_terminal(server: Server) -> None:
    server.front_door_only()
    log = server.home / "logs" / "server.log"
    before = log.read_text(encoding="utf-8")
    lines = ["[evil] a\u2028[forged] b", "[evil] c\x85[forged] d", "[evil] e\x0b[forged] f\x0cg",
             "[evil] \x1b[2J\x1b[31mred\x1b]0;title\x07", "[evil] half \ud83d emoji", "[evil] \x1c\x1d\x1e\u2029"]
    r = server.request("POST", "/api/admin/log-ingest", content=json.dumps({"lines": lines}),
                       headers={"Content-Type": "application/json", "Authorization": f"Bearer {server.token}"})
    assert r.status_code == 200 and r.json()["appended"] == len(lines)
    added = log.read_text(encoding="utf-8")[len(before):]
    evil = [line for line in added.splitlines() if "[evil]" in line or "[forged]" in line]
    assert len(evil) == len(lines) and all(line.startswith("[evil]") for line in evil)
    for raw in ("\u2028", "\x85", "\x0b", "\x0c", "\x1b", "\x07", "\x1c", "\u2029"):
        assert raw not in added
    assert "\\u2028" in added and "\\x1b[31m" in added and "\\ud83d" in added


# ------------------------------------------------------------------------------ the fuzz pass
json_scalars = (st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30) | st.sampled_from(HOSTILE))
json_values = st.recursive(json_scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c,
                                                                                               max_size=4), max_leaves=25)
param_text = st.text(max_size=40) | st.sampled_from(HOSTILE)


def _mutate(data: st.DataObject, doc: Any) -> Any:
    """``doc`` with one value somewhere inside replaced by a random JSON value (or a key dropped)."""
    doc = copy.deepcopy(doc)
    node = doc
    for _ in range(data.draw(st.integers(0, 6))):
        if isinstance(node, dict) and node:
            key = data.draw(st.sampled_from(sorted(node)))
            if isinstance(node[key], (dict, list)) and node[key]:
                node = node[key]
                continue
            if data.draw(st.booleans()):
                node[key] = data.draw(json_values)
            else:
                del node[key]
            return doc
        if isinstance(node, list) and node:
            i = data.draw(st.integers(0, len(node) - 1))
            if isinstance(node[i], (dict, list)) and node[i]:
                node = node[i]
                continue
            node[i] = data.draw(json_values)
            return doc
        break
    if isinstance(node, dict):
        node[data.draw(st.text(max_size=10))] = data.draw(json_values)
    return doc


def _body(data: st.DataObject, valid: Any) -> bytes:
    kind = data.draw(st.sampled_from(["mutated", "mutated", "random", "bytes"]))
    if kind == "bytes":
        return data.draw(st.binary(max_size=200))
    doc = _mutate(data, valid) if kind == "mutated" else data.draw(json_values)
    return json.dumps(doc).encode()


def _fuzz_webchat(server: Server, data: st.DataObject) -> None:
    valid = {"session": "fuzz-session-01", "text": "hello", "id": "c1"}
    server.request("POST", "/channels/webchat/messages", content=_body(data, valid),
                   headers={"Content-Type": data.draw(st.sampled_from(["application/json", "text/plain", ""]))})
    params = data.draw(st.dictionaries(st.sampled_from(["session", "after", "wait", "x"]), param_text, max_size=3))
    if params.get("wait", "").isdigit():
        del params["wait"]  # a real wait only slows the run
    last = data.draw(param_text)
    headers = {"Last-Event-ID": last} if data.draw(st.booleans()) and last.isascii() and last.isprintable() else {}
    server.request("GET", "/channels/webchat/messages", params=params, headers=headers)
    server.stream_status("/channels/webchat/stream", params=params, headers=headers)
    server.request("GET", "/channels/webchat", params=params)


def _fuzz_telegram(server: Server, data: st.DataObject) -> None:
    valid = telegram_update(data.draw(st.integers(1, 10**6)), data.draw(st.integers(1, 10**6)), "hi",
                            reply_to={"message_id": 3, "text": "earlier", "from": {"id": 5, "username": "z"}})
    valid["message"]["photo"] = [{"file_id": "p1"}]
    valid["message"]["contact"] = {"phone_number": "+1 555", "user_id": valid["message"]["from"]["id"]}
    headers = TG if data.draw(st.integers(0, 9)) else {"X-Telegram-Bot-Api-Secret-Token": data.draw(param_text)
                                                       if data.draw(st.booleans()) else "wrong"}
    headers = {k: v for k, v in headers.items() if v.isascii() and "\x00" not in v and "\n" not in v}
    server.request("POST", "/channels/telegram/webhook", content=_body(data, valid), headers=headers)


def _fuzz_whatsapp(server: Server, data: st.DataObject) -> None:
    valid = whatsapp_payload("4477009" + str(data.draw(st.integers(10000, 99999))), f"wamid.F{data.draw(st.integers())}",
                             "hi", context_id="wamid.X")
    raw = _body(data, valid)
    _, headers = wa_signed({})
    import hashlib
    import hmac

    if data.draw(st.integers(0, 9)):
        headers["X-Hub-Signature-256"] = "sha256=" + hmac.new(b"wa-app-secret", raw, hashlib.sha256).hexdigest()
    server.request("POST", "/channels/whatsapp/webhook", content=raw, headers=headers)
    params = data.draw(st.dictionaries(st.sampled_from(["hub.mode", "hub.verify_token", "hub.challenge", "x"]),
                                       param_text, max_size=3))
    server.request("GET", "/channels/whatsapp/webhook", params=params)


def _fuzz_admin_and_public_routes(server: Server, data: st.DataObject) -> None:
    auth_choice = data.draw(st.sampled_from(["token", "none", "junk"]))
    junk = data.draw(st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=80))
    auth = {"token": {"Authorization": f"Bearer {server.token}"}, "none": {},
            "junk": {"Authorization": f"Bearer {junk}"}}[auth_choice]
    server.request("POST", "/api/admin/log-ingest", content=_body(data, {"lines": ["[fuzz] ok"]}),
                   headers={"Content-Type": "application/json", **auth})
    server.request("POST", "/api/admin/session", content=_body(data, {"accountId": "acct-0001", "pin": "0000-no"}),
                   headers={"Content-Type": "application/json"})
    server.request("GET", "/api/admin/session", headers=auth)
    segment = data.draw(st.text(max_size=30) | st.sampled_from(["%2e%2e", "..", "%252e", "%5c", "a%00b", "%ff", "."]))
    from urllib.parse import quote

    server.request("GET", "/sites/" + quote(segment.encode("utf-8", "surrogatepass"), safe="/%"))
    server.request("GET", "/healthz", params=data.draw(st.dictionaries(param_text, param_text, max_size=2)))


def _fuzz_mcp_over_http(server: Server, data: st.DataObject) -> None:
    valid = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "f", "version": "1"}}}
    if data.draw(st.booleans()):
        valid = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {server.token}"}
    if data.draw(st.booleans()):
        headers["Mcp-Session-Id"] = data.draw(st.text(alphabet="abcdef0123456789", max_size=40))
    server.request("POST", "/mcp/probe", content=_body(data, valid), headers=headers)


def test_fuzz_webchat(server: Server) -> None:
    fuzz(server, _fuzz_webchat)


def test_fuzz_telegram(server: Server) -> None:
    fuzz(server, _fuzz_telegram)


def test_fuzz_whatsapp(server: Server) -> None:
    fuzz(server, _fuzz_whatsapp)


def test_fuzz_admin_and_public_routes(server: Server) -> None:
    server.front_door_only()
    fuzz(server, _fuzz_admin_and_public_routes)


def test_fuzz_mcp_over_http(server: Server) -> None:
    server.front_door_only()
    fuzz(server, _fuzz_mcp_over_http)
