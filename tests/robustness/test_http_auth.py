"""An exposed server is not an open admin door (docs/http.md#credentials): `/mcp/<plugin>` and the admin API need the
serving account's credential; `--open-local` opens them to loopback requests only and refuses a
non-loopback bind; public routes stay open; one account's tokens open no other account's server."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from robust_support import cli, start
from serve_helpers import FIXTURES, make_account, raw_request, start_serve

INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}}}).encode()
MCP = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
PIN = "4821-blue"


def _env(home: Path, account: str, **extra: str) -> dict[str, str]:
    return {"ACCOUNT_ID": account, "PLUGHOST_HOME": str(home), **extra}


def _serve(home: Path, account: str, *args: str, **extra: str):
    served = start_serve(*args, env=_env(home, account, **extra), plugins_dir=FIXTURES / "ok")
    from robust_support import STARTED

    STARTED.append(served)
    return served


def _mint(port: int, account: str) -> str:
    r = raw_request(port, "/api/admin/session", method="POST", headers={"Content-Type": "application/json"},
                    body=json.dumps({"accountId": account, "pin": PIN}).encode())
    assert r.status == 200, r.body
    return r.json()["token"]


def _token(home: Path, account: str) -> str:
    out = cli("admin", "http-token", account, env={"PLUGHOST_HOME": str(home)})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_mcp_and_admin_need_the_serving_accounts_credential(plughost_home: Path) -> None:
    from plughost.plugins.admin import sessions

    for account in ("acct-a", "acct-b"):
        make_account(plughost_home, account)
        sessions.set_pin(plughost_home, account, PIN, "owner")
    a = _serve(plughost_home, "acct-a")
    b = _serve(plughost_home, "acct-b")
    out = "".join(a.stdout_lines)
    assert "mcp auth:      Authorization: Bearer $(cat " in out and "pht_" not in out  # how, never the token
    token_a, token_b = _token(plughost_home, "acct-a"), _token(plughost_home, "acct-b")
    assert token_a != token_b and token_a.startswith("pht_")
    session_a, session_b = _mint(a.port, "acct-a"), _mint(b.port, "acct-b")

    def mcp(port: int, token: str | None = None) -> int:
        headers = {**MCP, **({"Authorization": f"Bearer {token}"} if token is not None else {})}
        return raw_request(port, "/mcp/probe", method="POST", headers=headers, body=INIT).status

    for bad in (None, "", "pht_" + "0" * 64, token_b, session_b, session_a + "x", token_a[:-1], "v1.e30.e30"):
        response = raw_request(a.port, "/mcp/probe", method="POST", body=INIT,
                               headers={**MCP, **({"Authorization": f"Bearer {bad}"} if bad is not None else {})})
        assert response.status == 401, bad
        assert response.json()["error"] == "unauthorized" and response.headers["www-authenticate"].startswith("Bearer")
    assert mcp(a.port, token_a) == 200 and mcp(a.port, session_a) == 200
    assert mcp(b.port, token_b) == 200 and mcp(b.port, token_a) == 401 and mcp(b.port, session_a) == 401
    # a session minted on A's server for B's account is refused too (the PIN exchange is per server)
    cross = raw_request(a.port, "/api/admin/session", method="POST", headers={"Content-Type": "application/json"},
                        body=json.dumps({"accountId": "acct-b", "pin": PIN}).encode())
    assert cross.status == 401
    check = raw_request(a.port, "/api/admin/session", headers={"Authorization": f"Bearer {session_b}"})
    assert check.status == 401 and check.json()["error"] == "session-wrong-account"
    ingest = {"Content-Type": "application/json"}
    body = b'{"line": "[forged] from a client without a credential"}'
    assert raw_request(a.port, "/api/admin/log-ingest", method="POST", headers=ingest, body=body).status == 401
    ok = raw_request(a.port, "/api/admin/log-ingest", method="POST",
                     headers={**ingest, "Authorization": f"Bearer {token_a}"}, body=b'{"line": "[ok] with a token"}')
    assert ok.status == 200
    # public routes stay open
    assert raw_request(a.port, "/healthz").status == 200
    assert raw_request(a.port, "/channels/webchat").status == 200
    assert raw_request(a.port, "/sites/nothing-here").status == 404
    assert raw_request(a.port, "/channels/telegram/webhook", method="POST", body=b"{}").status == 503  # no secret set
    for served in (a, b):
        code, _, err = served.terminate()
        assert code == 0 and "Traceback" not in err


def test_open_local_is_for_loopback_requests_and_binds_only(plughost_home: Path) -> None:
    make_account(plughost_home, "acct-a")
    served = _serve(plughost_home, "acct-a", "--open-local")
    deadline = time.monotonic() + 20  # the hint follows the URLs; the reader thread collects it
    while "mcp auth:" not in "".join(served.stdout_lines) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "mcp auth:      open to loopback requests (--open-local)" in "".join(served.stdout_lines)
    assert raw_request(served.port, "/mcp/probe", method="POST", headers=MCP, body=INIT).status == 200
    for headers, host in (({}, "tunnel.example.com"), ({"X-Forwarded-For": "203.0.113.7"}, "127.0.0.1"),
                          ({"Origin": "https://evil.example"}, "127.0.0.1")):
        r = raw_request(served.port, "/mcp/probe", method="POST", headers={**MCP, **headers}, body=INIT, host=host)
        assert r.status == 401, (headers, host)  # a tunnel or a page on this machine does not get the open door
    # a page on another local port is another site: its text/plain POST (sent without a preflight) is refused
    ingest = {"Content-Type": "text/plain", "Origin": f"http://127.0.0.1:{served.port + 1}"}
    r = raw_request(served.port, "/api/admin/log-ingest", method="POST", headers=ingest, body=b'{"line": "[forged]"}')
    assert r.status == 401 and "own pages only" in r.json()["detail"], r.body
    own = {**ingest, "Content-Type": "application/json", "Origin": f"http://127.0.0.1:{served.port}"}
    assert raw_request(served.port, "/api/admin/log-ingest", method="POST", headers=own,
                       body=b'{"line": "[ok] own page"}').status == 200
    assert raw_request(served.port, "/mcp/probe", method="POST", body=INIT,
                       headers={**MCP, "Origin": f"http://localhost:{served.port}"}).status == 401  # Host is 127.0.0.1
    for odd in ("http://[", f"http://127.0.0.1:{served.port}]", "http://[::1"):  # a parser would raise: 401, not 500
        r = raw_request(served.port, "/api/admin/log-ingest", method="POST", headers={**ingest, "Origin": odd},
                        body=b'{"line": "[forged]"}')
        assert r.status == 401, (odd, r.status, r.body)
    code, _, _ = served.terminate()
    assert code == 0
    env = _env(plughost_home, "acct-a")
    for args, extra in ((["--open-local", "--host", "0.0.0.0"], {}), (["--host", "0.0.0.0"], {"PLUGHOST_OPEN_LOCAL": "1"})):
        refused = cli("--plugins-dir", str(FIXTURES / "ok"), "serve", "--port", "0", *args, env={**env, **extra},
                      timeout=60)
        assert refused.returncode == 2, refused.stderr
        lines = [line for line in refused.stderr.splitlines() if "refusing a non-loopback bind" in line]
        assert len(lines) == 1 and "--host 0.0.0.0" in lines[0] and "Traceback" not in refused.stderr


@pytest.mark.parametrize("bind", ["0.0.0.0"])
def test_a_non_loopback_bind_without_the_switch_serves_with_credentials(plughost_home: Path, bind: str) -> None:
    make_account(plughost_home, "acct-a")
    served = start(_env(plughost_home, "acct-a"), "--host", bind)
    assert raw_request(served.port, "/mcp/memory", method="POST", headers=MCP, body=INIT).status == 401
    assert raw_request(served.port, "/healthz").status in (200, 503)
    served.terminate()
