"""Admin sessions: PIN storage, minting over HTTP, and every kind of bad token refused silently."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
import time
from pathlib import Path

import pytest
from serve_helpers import make_account

from plughost.plugins.admin import sessions
from plughost.util.errors import UserError

ACCOUNT = "acct-demo-01"
PIN = "4821-blue"


@pytest.fixture
def run_admin_cli(cli):
    def run(*args: str, pin: str):
        return cli("admin", *args, input=pin + "\n")

    return run


@pytest.fixture
def account_with_pin(plughost_home: Path) -> Path:
    make_account(plughost_home, ACCOUNT)
    sessions.set_pin(plughost_home, ACCOUNT, PIN, "owner")
    return plughost_home


def test_set_pin_command(plughost_home: Path, run_admin_cli) -> None:
    make_account(plughost_home, ACCOUNT)
    result = run_admin_cli("set-pin", ACCOUNT, pin=PIN)
    assert result.returncode == 0, result.stderr
    assert f"admin PIN set for account {ACCOUNT} (userId owner)" in result.stdout
    assert sessions.verify_pin(plughost_home, ACCOUNT, PIN) == "owner"
    assert sessions.verify_pin(plughost_home, ACCOUNT, PIN + "x") is None


def mint(server, account: str = ACCOUNT, pin: str = PIN):
    return server.post_json("/api/admin/session", {"accountId": account, "pin": pin})


def check(server, token: str):
    return server.get("/api/admin/session", headers={"Authorization": f"Bearer {token}"})


def test_pin_is_stored_hashed_private_and_atomic(account_with_pin: Path) -> None:
    path = account_with_pin / "accounts" / ACCOUNT / "credentials" / "admin-pin"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    text = path.read_text()
    assert PIN not in text
    record = json.loads(text)
    assert record["scheme"] == "scrypt" and record["userId"] == "owner"
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp file left


def test_set_pin_bad_input(plughost_home: Path, run_admin_cli) -> None:
    make_account(plughost_home, ACCOUNT)
    for pin in ("12", "1234", "12345"):  # the documented minimum is six characters
        short = run_admin_cli("set-pin", ACCOUNT, pin=pin)
        assert short.returncode == 2 and "pin: expected 6 to 64 characters" in short.stderr, short.stderr
    assert not sessions.has_pin(plughost_home, ACCOUNT)
    missing = run_admin_cli("set-pin", "no-such-account", pin=PIN)
    assert missing.returncode == 2 and "no account 'no-such-account'" in missing.stderr
    bad_id = run_admin_cli("set-pin", "../evil", pin=PIN)
    assert bad_id.returncode == 2 and ("accountId: expected" in bad_id.stderr or "not a valid account id" in bad_id.stderr)


def test_mint_and_validate_over_http(account_with_pin: Path, live_app) -> None:
    server = live_app()
    response = mint(server)
    assert response.status == 200, response.body
    data = response.json()
    assert data["accountId"] == ACCOUNT and data["userId"] == "owner"
    token = data["token"]
    assert token.startswith("v1.") and token.count(".") == 2
    payload = json.loads(sessions.unb64url(token.split(".")[1]))
    assert payload["v"] == "adm" and payload["a"] == ACCOUNT and payload["u"] == "owner"
    assert len(payload["n"]) == 32 and abs(payload["c"] - time.time() * 1000) < 60_000
    assert "admin_session=" in response.headers["set-cookie"] and "HttpOnly" in response.headers["set-cookie"]
    ok = check(server, token)
    assert ok.status == 200 and ok.json()["userId"] == "owner"
    by_cookie = server.get("/api/admin/session", headers={"Cookie": f"admin_session={token}"})
    assert by_cookie.status == 200
    assert "[admin-session] op=minted accountId=acct-dem userId=owner" in (
        account_with_pin / "logs" / "server.log").read_text()


def test_secret_file_is_private_and_created_once(account_with_pin: Path, live_app) -> None:
    server = live_app()
    first = mint(server).json()["token"]
    secret = account_with_pin / "credentials" / "admin-session-secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(secret.parent.stat().st_mode) == 0o700
    content = secret.read_bytes()
    mint(server)
    assert secret.read_bytes() == content
    assert check(server, first).status == 200


def _load(home: str, out: multiprocessing.Queue) -> None:
    out.put(sessions.load_secret(Path(home)))


def test_concurrent_first_use_agrees_on_one_secret(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_load, args=(str(tmp_path), out)) for _ in range(6)]
    for p in procs:
        p.start()
    results = {out.get(timeout=20) for _ in procs}
    for p in procs:
        p.join()
    assert len(results) == 1
    assert (tmp_path / "credentials" / "admin-session-secret").read_bytes().strip() == results.pop()


def test_wrong_pin_and_unknown_account_look_alike(account_with_pin: Path, live_app) -> None:
    server = live_app()
    wrong = mint(server, pin="0000-nope")
    unknown = mint(server, account="acct-unknown")
    assert wrong.status == unknown.status == 401
    assert wrong.json() == unknown.json() == {"error": "invalid-pin", "detail": "the account or PIN is not right"}


def test_repeated_wrong_pins_lock_the_account(account_with_pin: Path, live_app) -> None:
    server = live_app()
    for _ in range(5):
        assert mint(server, pin="9999-nope").status == 401
    locked = mint(server)
    assert locked.status == 429 and locked.json()["error"] == "too-many-requests"


@pytest.mark.parametrize("body, field", [
    ({"pin": PIN}, "body.accountId"),
    ({"accountId": ACCOUNT}, "body.pin"),
    ({"accountId": ACCOUNT, "pin": 1234}, "body.pin"),
    ({"accountId": "../x", "pin": PIN}, "body.accountId"),
])
def test_mint_bad_bodies(account_with_pin: Path, live_app, body: dict, field: str) -> None:
    response = live_app().post_json("/api/admin/session", body)
    assert response.status == 400 and response.json()["detail"].startswith(field)


def _flip(token: str, index: int) -> str:
    ch = token[index]
    repl = "A" if ch != "A" else "B"
    if ch == ".":
        repl = "-"
    return token[:index] + repl + token[index + 1:]


def test_every_tampered_token_is_refused_silently(account_with_pin: Path, live_app) -> None:
    server = live_app()
    token = mint(server).json()["token"]
    secret = sessions.load_secret(account_with_pin)
    other = b"0" * 64
    now = int(time.time() * 1000)
    log_path = account_with_pin / "logs" / "server.log"
    before = log_path.read_text()
    # unit level: a flipped character at every position, and the last char's spare bits
    for i in range(len(token)):
        assert sessions.validate(secret, _flip(token, i))[0] is None, i
    sig = token.rsplit(".", 1)[1]
    for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_":
        if ch != sig[-1]:
            assert sessions.validate(secret, token[:-1] + ch)[0] is None
    payload_b64 = token.split(".")[1]
    raw = bytearray(sessions.unb64url(payload_b64))
    for i in range(len(raw)):  # one flipped byte of the payload, re-encoded, old signature
        flipped = bytearray(raw)
        flipped[i] ^= 0x01
        forged = f"v1.{sessions.b64url(bytes(flipped))}.{sig}"
        assert sessions.validate(secret, forged)[0] is None
    cases = {
        "flipped-payload": _flip(token, 10),
        "flipped-signature": _flip(token, len(token) - 5),
        "truncated": token[:-6],
        "truncated-to-two-parts": token.rsplit(".", 1)[0],
        "expired": sessions.mint(secret, ACCOUNT, "owner", now_ms=now - sessions.TTL_MS - 1000),
        "other-secret": sessions.mint(other, ACCOUNT, "owner"),
        "padded": token + "==",
        "wrong-version": "v2." + token[3:],
        "garbage": "not-a-token",
        "empty-parts": "v1..",
    }
    for name, bad in cases.items():
        response = check(server, bad)
        assert response.status == 401, name
        assert response.json()["error"] in ("session-invalid", "session-expired-age"), name
    assert check(server, cases["expired"]).json()["error"] == "session-expired-age"
    assert server.get("/api/admin/session").json()["error"] == "session-missing"
    assert log_path.read_text() == before  # rejected tokens write no line
    assert check(server, token).status == 200


def test_ttl_boundary_and_schema(account_with_pin: Path) -> None:
    secret = sessions.load_secret(account_with_pin)
    now = int(time.time() * 1000)
    edge = sessions.mint(secret, ACCOUNT, "owner", now_ms=now - sessions.TTL_MS + 5_000)
    assert sessions.validate(secret, edge, now_ms=now)[1] == "ok"
    assert sessions.validate(secret, edge, now_ms=now + 10_000)[1] == "expired"
    future = sessions.mint(secret, ACCOUNT, "owner", now_ms=now + 3_600_000)
    assert sessions.validate(secret, future, now_ms=now)[1] == "expired"
    import hashlib
    import hmac

    for payload in ({"v": "usr", "a": ACCOUNT, "u": "o", "c": now, "n": "0" * 32},
                    {"v": "adm", "a": ACCOUNT, "u": "o", "c": str(now), "n": "0" * 32},
                    {"v": "adm", "a": ACCOUNT, "u": "o", "c": now, "n": "short"},
                    {"v": "adm", "a": "", "u": "o", "c": now, "n": "0" * 32}):
        body = json.dumps(payload, separators=(",", ":")).encode()
        signed = f"v1.{sessions.b64url(body)}.{sessions.b64url(hmac.new(secret, body, hashlib.sha256).digest())}"
        assert sessions.validate(secret, signed)[1] == "invalid-token", payload


def test_loose_secret_permissions_are_tightened(tmp_path: Path) -> None:
    sessions.load_secret(tmp_path)
    path = tmp_path / "credentials" / "admin-session-secret"
    os.chmod(path, 0o644)
    sessions.load_secret(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_check_pin_rules() -> None:
    with pytest.raises(UserError):
        sessions.check_pin("with space")
    assert sessions.check_pin("1234") == "1234"  # a PIN set before the minimum still signs in
    with pytest.raises(UserError, match="6 to 64"):
        sessions.check_new_pin("1234")
    assert sessions.check_new_pin("482913") == "482913"


def test_set_pin_with_input_ended_is_one_line(plughost_home: Path, cli) -> None:
    make_account(plughost_home, ACCOUNT)
    ended = cli("admin", "set-pin", ACCOUNT, input="")
    assert ended.returncode == 2 and "Traceback" not in ended.stderr
    assert ended.stderr.strip().splitlines()[-1].endswith("pin: expected 6 to 64 characters without spaces") or \
        "pin:" in ended.stderr


def test_parallel_wrong_pins_check_at_most_the_limit(account_with_pin: Path, capfd) -> None:
    """Eighteen wrong PINs at once: five are checked, thirteen are refused as locked before any
    hashing, and the right PIN is refused too until the window passes."""
    import asyncio

    from plughost.plugins.admin.session_routes import MAX_FAILURES, PinGate, PinLogin

    login = PinLogin(lambda: account_with_pin)
    login.gate = PinGate(rate=1000, burst=1000, slots=2, waiting=100)  # the server-wide bound is not under test

    async def flood() -> list[int]:
        results = await asyncio.gather(*(login.attempt(ACCOUNT, f"wrong-{i:04d}") for i in range(18)))
        return [int(getattr(refused, "status_code", 200)) for _tok, _user, refused in results]

    capfd.readouterr()
    statuses = asyncio.run(flood())
    after = asyncio.run(login.attempt(ACCOUNT, PIN))
    err = capfd.readouterr().err
    assert statuses.count(401) == MAX_FAILURES and statuses.count(429) == 18 - MAX_FAILURES, statuses
    assert err.count("op=pin-rejected") == MAX_FAILURES and err.count("op=locked") == 18 - MAX_FAILURES + 1
    assert after[0] is None and after[2].status_code == 429
