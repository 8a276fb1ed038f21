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
        "accountId": account,
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
    with open(capture, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"env_session": os.environ.get("PLUGHOST_SESSION_ID"), **data}) + "\n")
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


def wait_for(predicate: Any, timeout: float = 20.0, interval: float = 0.02) -> Any:
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

    from host.hookspecs import hookimpl as _hookimpl

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


def agent_calls(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "agent-calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
