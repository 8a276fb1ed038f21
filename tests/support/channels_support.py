"""Shared helpers for the channels tests: an account on disk with admins and users."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ACCOUNT = "acct-0001"
OWNER_PHONE = "+44 7700 900001"
ADMIN_PHONE = "+44 7700 900002"
STRAY_ADMIN_PHONE = "+44 7700 900003"


def write_account(home: Path, account: str = ACCOUNT, *, users: list[dict] | None = None,
                  admin_phones: list[str] | None = None, admins: list[str] | None = None) -> Path:
    folder = home / "accounts" / account
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "account.json").write_text(json.dumps({
        "accountId": account, "enabledPlugins": [],
        "adminPhones": admin_phones if admin_phones is not None else [OWNER_PHONE, ADMIN_PHONE, STRAY_ADMIN_PHONE],
        "admins": admins if admins is not None else ["u-owner", "u-ana"],
    }))
    (folder / "users.json").write_text(json.dumps(users if users is not None else [
        {"userId": "u-owner", "phone": OWNER_PHONE},
        {"userId": "u-ana", "phone": ADMIN_PHONE},
        {"userId": "u-bob", "phone": "+1 555 0100"},
    ]))
    return folder


@pytest.fixture
def account(plughost_home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    write_account(plughost_home)
    monkeypatch.setenv("ACCOUNT_ID", ACCOUNT)
    return ACCOUNT


# --- real HTTP on loopback ---------------------------------------------------------------

import contextlib  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from typing import Any  # noqa: E402


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """Run an ASGI app with uvicorn on 127.0.0.1 (random free port) in a thread; yield its base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


AGENT_SCRIPT = r'''
import json, os, sys, time
data = json.loads(sys.stdin.read())
capture = os.environ.get("AGENT_CAPTURE")
if capture:
    fd = os.open(capture, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, (json.dumps({"env_session": os.environ.get("PLUGHOST_SESSION_ID"),
                              "env_role": os.environ.get("PLUGHOST_SESSION_ROLE"), **data}) + "\n").encode())
    os.close(fd)
delay = float(os.environ.get("AGENT_DELAY", "0"))
if delay:
    time.sleep(delay)
text = data["payload"].rstrip().splitlines()[-1]
print("echo: " + text)
'''


def agent_command(tmp_path: Path) -> str:
    script = tmp_path / "agent.py"
    script.write_text(AGENT_SCRIPT)
    return f"{sys.executable} -S {script}"


def wait_for(predicate: Any, timeout: float = 60.0, interval: float = 0.02) -> Any:
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


class RulesPlugin:
    """A stand-in memory plugin answering the active-rules hook (plugins never import each other)."""

    def __init__(self, rules: list[str], owner: str | None = "u-owner") -> None:
        self.rules, self.owner, self.calls = rules, owner, 0

    from plughost.runtime.hookspecs import hookimpl as _hookimpl

    @_hookimpl
    def plughost_active_rules(self, account_id: str) -> dict[str, Any]:
        self.calls += 1
        return {"rules": list(self.rules), "source": "owner" if self.owner else "no-owner", "owner": self.owner}


def channel_host(make_host: Any, tmp_path: Path, **env: str) -> Any:
    """A loaded host serving ACCOUNT: the embedded store, the command runner running AGENT_SCRIPT."""
    base = {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_AGENT_COMMAND": agent_command(tmp_path),
            "AGENT_CAPTURE": str(tmp_path / "agent-calls.jsonl"), "PLUGHOST_AGENT_TIMEOUT": "30"}
    base.update(env)
    return make_host(**base)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The complete lines a recording stand-in has appended so far: a test polling the file while
    the stand-in writes sees the last line only once it ends."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line.strip()]


def agent_calls(tmp_path: Path) -> list[dict[str, Any]]:
    return read_jsonl(tmp_path / "agent-calls.jsonl")


class FakeApis:
    """Loopback fakes of the Telegram Bot API and the WhatsApp Cloud API that record requests.

    ``script`` holds (status, headers) answers to give before the normal 200s, per API.
    """

    TOKEN = "123456:TEST-token"
    PHONE_ID = "1098765"

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: dict[str, list[tuple[int, dict[str, str]]]] = {"telegram": [], "whatsapp": []}
        self._lock = threading.Lock()
        self._n = 0

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.routing import Route

        async def telegram(request: Any) -> Any:
            return await self._answer("telegram", request)

        async def whatsapp(request: Any) -> Any:
            return await self._answer("whatsapp", request)

        return Starlette(routes=[Route("/bot{token}/sendMessage", telegram, methods=["POST"]),
                                 Route("/{phone_id}/messages", whatsapp, methods=["POST"])])

    async def _answer(self, api: str, request: Any) -> Any:
        from starlette.responses import JSONResponse

        body = json.loads(await request.body())
        with self._lock:
            self._n += 1
            n = self._n
            scripted = self.script[api].pop(0) if self.script[api] else None
            self.requests.append({"api": api, "path": request.url.path, "headers": dict(request.headers),
                                  "json": body, "status": scripted[0] if scripted else 200})
        if scripted:
            return JSONResponse({"error": {"message": "scripted"}}, status_code=scripted[0], headers=scripted[1])
        if api == "telegram":
            return JSONResponse({"ok": True, "result": {"message_id": 10_000 + n, "chat": {"id": body["chat_id"]},
                                                        "text": body["text"]}})
        return JSONResponse({"messaging_product": "whatsapp", "contacts": [{"input": body["to"], "wa_id": body["to"]}],
                             "messages": [{"id": f"wamid.OUT{n}"}]})

    def sent(self, api: str | None = None, ok_only: bool = True) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if (api is None or r["api"] == api)
                    and (not ok_only or r["status"] == 200)]

    def env(self, base: str) -> dict[str, str]:
        return {"PLUGHOST_TELEGRAM_TOKEN": self.TOKEN, "PLUGHOST_TELEGRAM_SECRET": "tg-secret",
                "PLUGHOST_TELEGRAM_API_BASE": base, "PLUGHOST_WHATSAPP_TOKEN": "wa-token",
                "PLUGHOST_WHATSAPP_PHONE_ID": self.PHONE_ID, "PLUGHOST_WHATSAPP_APP_SECRET": "wa-app-secret",
                "PLUGHOST_WHATSAPP_VERIFY_TOKEN": "wa-verify", "PLUGHOST_WHATSAPP_API_BASE": base,
                "PLUGHOST_CHANNELS_MAX_RETRY_DELAY": "2"}


_update_ids = iter(range(500_000, 10_000_000))


def telegram_update(user_id: int, message_id: int, text: str, *, reply_to: dict | None = None,
                    contact_phone: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "message_id": message_id, "from": {"id": user_id, "is_bot": False, "first_name": "Ana", "username": f"u{user_id}"},
        "chat": {"id": user_id, "first_name": "Ana", "type": "private"}, "date": 1764464400, "text": text,
    }
    if reply_to:
        message["reply_to_message"] = reply_to
    if contact_phone:
        message.pop("text")
        message["contact"] = {"phone_number": contact_phone, "first_name": "Ana", "user_id": user_id}
    return {"update_id": next(_update_ids), "message": message}


def whatsapp_payload(phone: str, wamid: str, text: str | None = None, *, context_id: str | None = None,
                     image: dict | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"from": phone, "id": wamid, "timestamp": "1764464400"}
    if image is not None:
        msg.update(type="image", image=image)
    else:
        msg.update(type="text", text={"body": text})
    if context_id:
        msg["context"] = {"from": "15550009999", "id": context_id}
    return {"object": "whatsapp_business_account", "entry": [{"id": "WABA1", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550009999", "phone_number_id": FakeApis.PHONE_ID},
        "contacts": [{"profile": {"name": "Sam"}, "wa_id": phone}], "messages": [msg]}}]}]}


def wa_signed(body: dict[str, Any], secret: str = "wa-app-secret") -> tuple[bytes, dict[str, str]]:
    import hashlib
    import hmac

    raw = json.dumps(body).encode()
    sig = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    return raw, {"X-Hub-Signature-256": sig, "Content-Type": "application/json"}


TURN_DEFAULTS = {"agentSession": "", "channel": "test", "sender": "", "messageId": "", "payload": "", "text": ""}
"""What a test's turn says when its payload does not (``from_dict`` requires every key of the form)."""


def agent_turn(payload: dict[str, Any], principal: Any = None, session: str = "conv") -> Any:
    """A runner's typed turn from its documented JSON form (``AgentTurn.from_dict``): ``principal``
    (the serving process's; none: an empty environment's) narrowed to the payload's role and
    conversation, ``session`` when the payload names none, :data:`TURN_DEFAULTS` for the rest."""
    from plughost import AgentTurn
    from plughost.api.principals import resolve

    wire = {"sessionId": session, **TURN_DEFAULTS, **payload}
    return AgentTurn.from_dict(wire, principal if principal is not None else resolve({}))
