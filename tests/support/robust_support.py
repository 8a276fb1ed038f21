"""Helpers for the robustness tests: a real `plughost serve` with the channels' loopback fakes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from channels_support import ACCOUNT, FakeApis, agent_command, serve, write_account
from serve_helpers import ServeProcess, start_serve

STARTED: list[ServeProcess] = []
NO_LIMITS = {"PLUGHOST_RATE_WEBCHAT_ADDRESS": "0", "PLUGHOST_RATE_WEBCHAT_VISITOR": "0",
             "PLUGHOST_WEBCHAT_MAX_TURNS": "100000", "PLUGHOST_CHANNELS_MAX_QUEUED": "100000"}
"""Flood limits off: a test that is one client posting a backlog as fast as it can."""


def serve_env(home: Path, tmp: Path, api_base: str, fake: FakeApis, *, backend: str = "sqlite",
              **extra: str) -> dict[str, str]:
    """Env of a `plughost serve` for ACCOUNT with the fake APIs and the echo agent, on ``backend``
    (the embedded store unless asked: CI exports NEO4J_URI for the suites that run on both)."""
    from tests.backends import neo4j_env

    store = {**neo4j_env(), "PLUGHOST_STORE": "neo4j"} if backend == "neo4j" else \
        {"PLUGHOST_STORE": "sqlite", "NEO4J_URI": ""}
    return {**fake.env(api_base), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_HOME": str(home),
            "PLUGHOST_AGENT": "command", "PLUGHOST_AGENT_COMMAND": agent_command(tmp),
            "AGENT_CAPTURE": str(tmp / "agent-calls.jsonl"), "PLUGHOST_AGENT_TIMEOUT": "60",
            **store, **extra}


def start(env: dict[str, str], *args: str) -> ServeProcess:
    served = start_serve(*args, env=env)
    STARTED.append(served)
    return served


def stop_all() -> None:
    while STARTED:
        served = STARTED.pop()
        if served.proc.poll() is None:
            served.proc.send_signal(signal.SIGKILL)
            served.proc.wait(timeout=30)


@contextlib.contextmanager
def fakes(home: Path) -> Iterator[tuple[FakeApis, str]]:
    """The account on disk and the Telegram/WhatsApp fakes on loopback."""
    write_account(home)
    fake = FakeApis()
    with serve(fake.app()) as base:
        yield fake, base


def cli(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """``plughost *args`` in this process (cli_support; ``timeout`` is pytest-timeout's there)."""
    from cli_support import run_in_process

    return run_in_process(args, {**os.environ, **env})


def store_messages(home: Path, backend: str = "sqlite") -> list[Any]:
    """Every Message of ACCOUNT, read from the store (file or database) by a fresh host (the oracle)."""
    from plughost.ports.graph import Guards
    from plughost.runtime.host import Host
    from tests.backends import neo4j_env

    store = {**neo4j_env(), "PLUGHOST_STORE": "neo4j"} if backend == "neo4j" else {"PLUGHOST_STORE": "sqlite"}
    host = Host(env={**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, **store}).load()
    try:
        return host.store().find(guards=Guards(ACCOUNT), labels=["Message"], limit=100_000)
    finally:
        host.close()
