"""The agent runner (docs/channels.md#runners) and per-sender ordering.

A runner is any object with ``async run(session_id, turn: AgentTurn) -> str``; the
``plughost_agent_runner`` hook supplies one. The channels plugin's own provider picks one of
three by ``PLUGHOST_AGENT`` (:func:`builtin_runner`): ``memory`` (the default; answers from the
account's memory, :mod:`plughost.plugins.channels.memory_runner`), ``claude`` (the Claude Code CLI,
:mod:`plughost.plugins.channels.claude_runner`) or ``command`` (:class:`CommandRunner`: starts
``PLUGHOST_AGENT_COMMAND`` per turn, writes the turn's JSON (:meth:`AgentTurn.as_dict`) to its stdin and reads the
reply from its stdout, within ``PLUGHOST_AGENT_TIMEOUT`` seconds). Every sender has one
session with a deterministic id, so a sender's turns share their agent context across
restarts. :class:`KeyedSerializer` keeps one sender's turns strictly in order while different
senders run in parallel.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from plughost import AgentTurn
from plughost.api.principals import child_env
from plughost.plugins.channels.runner_gate import agent_choice as choice
from plughost.plugins.channels.settings import AGENT, AGENT_COMMAND, AGENT_TIMEOUT

T = TypeVar("T")
SESSION_NAMESPACE = uuid.UUID("5b0d8f4e-6a51-4c1e-9a57-0c3f1f2b7d10")
DEFAULT_TIMEOUT = AGENT_TIMEOUT.default


class RunnerError(Exception):
    """The agent did not produce a reply (timeout, non-zero exit, not configured)."""


def session_id_for(account_id: str, sender_key: str) -> str:
    """The sender's conversation key (a UUID): the ``sessionId`` its stored messages carry."""
    return str(uuid.uuid5(SESSION_NAMESPACE, f"{account_id}\x1f{sender_key}"))


TURN_KINDS = ("visitor", "admin", "scheduled")
"""Who a turn runs for, each with agent sessions of its own: a visitor's public turn, an admin
writing in, and an owner's scheduled message to a sender (an owner turn whose reply alone reaches
the sender). A session is never shared between kinds, so a visitor's next turn cannot resume a
session that held the owner's rules or an admin tool's results."""


def agent_session_for(account_id: str, sender_key: str, kind: str) -> str:
    """One deterministic agent session per (account, kind of turn, sender): a UUID, as Claude Code's
    ``--session-id`` wants. Distinct from :func:`session_id_for`, so no session made before turns
    carried their kind is ever resumed."""
    if kind not in TURN_KINDS:
        raise ValueError(f"kind: expected one of {', '.join(TURN_KINDS)}, got {kind!r}")
    return str(uuid.uuid5(SESSION_NAMESPACE, f"{account_id}\x1f{kind}\x1f{sender_key}"))


def agent_sessions_of(account_id: str, sender_key: str) -> set[str]:
    """Every agent session a sender may have (each kind, and the one from before kinds): erasure's set."""
    return {session_id_for(account_id, sender_key), *(agent_session_for(account_id, sender_key, k) for k in TURN_KINDS)}


class CommandRunner:
    """Runs a command per turn: stdin = the turn's JSON (:meth:`AgentTurn.as_dict`), stdout = reply."""

    name = "command"

    def __init__(self, command: list[str] | None, *, timeout: float = DEFAULT_TIMEOUT,
                 env: Mapping[str, str] | None = None) -> None:
        self.command = command
        self.timeout = timeout
        self.env = dict(env if env is not None else os.environ)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> CommandRunner:
        raw = AGENT_COMMAND.read(env)
        return cls(shlex.split(raw) if raw else None, timeout=AGENT_TIMEOUT.read(env), env=env)

    async def run(self, session_id: str, turn: AgentTurn) -> str:
        if not self.command:
            raise RunnerError("not-configured: set PLUGHOST_AGENT_COMMAND")
        # the turn's principal is what the agent's own Stop hook (`plughost record-turn`) keys on:
        # record admin turns, never a public visitor's
        env = child_env(self.env, turn.principal)
        if turn.specialist:
            env["PLUGHOST_SPECIALIST"] = turn.specialist
        else:
            env.pop("PLUGHOST_SPECIALIST", None)
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=env, start_new_session=True)
        except OSError as exc:
            raise RunnerError(f"spawn-failed: {exc.strerror or exc}") from None
        data = json.dumps(turn.as_dict(), ensure_ascii=False).encode("utf-8")
        try:
            out, err = await asyncio.wait_for(proc.communicate(data), self.timeout)
        except TimeoutError:
            kill_group(proc.pid)  # the agent and whatever it started (MCP servers, tools)
            await proc.wait()
            raise RunnerError(f"timeout after {self.timeout:g}s") from None
        except asyncio.CancelledError:
            kill_group(proc.pid)  # a stopping server ended the turn: its own session outlives us otherwise
            raise
        if proc.returncode != 0:
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            raise RunnerError(f"exit {proc.returncode}: {tail[0][:200]}")
        return out.decode("utf-8", "replace").strip()


def kill_group(pid: int) -> None:
    """SIGKILL a process group started with ``start_new_session=True``; gone already is fine."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


AGENTS = AGENT.choices


class BrokenRunner:
    """Stands in for a runner that could not be built: every turn fails with the reason (polite fallback)."""

    name = "broken"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def run(self, session_id: str, turn: AgentTurn) -> str:
        raise RunnerError(f"not-configured: {self.reason}")


def agent_choice(env: Mapping[str, str]) -> str:
    """``PLUGHOST_AGENT``; unset means ``command`` when ``PLUGHOST_AGENT_COMMAND`` is set, else ``memory``."""
    return choice(env)


class KeyedSerializer:
    """Jobs with one key run strictly in submission order; different keys run concurrently."""

    def __init__(self) -> None:
        self._tails: dict[str, asyncio.Task[object]] = {}  # any one job's result
        self._counts: dict[str, int] = {}  # jobs submitted and not finished, per key
        self.stopping = False
        self.skipped = 0  # jobs a stopping process did not start

    def queued(self, key: str) -> int:
        """Jobs of ``key`` waiting or running."""
        return self._counts.get(key, 0)

    def submit(self, key: str, factory: Callable[[], Awaitable[T]]) -> asyncio.Task[T]:
        prev = self._tails.get(key)

        async def job() -> T:
            if prev is not None:
                await asyncio.wait([prev])  # the previous turn's outcome is its own business
            if self.stopping:  # a stopping process starts no turn: the next start resumes it
                self.skipped += 1
                raise asyncio.CancelledError
            return await factory()

        task = asyncio.ensure_future(job())
        self._tails[key] = task
        self._counts[key] = self._counts.get(key, 0) + 1

        def done(_: asyncio.Task[T]) -> None:
            if self._tails.get(key) is task:
                del self._tails[key]
            left = self._counts.get(key, 1) - 1
            if left > 0:
                self._counts[key] = left
            else:
                self._counts.pop(key, None)

        task.add_done_callback(done)
        return task

    def pending(self) -> int:
        return len(self._tails)

    async def drain(self) -> None:
        while self._tails:
            await asyncio.wait(list(self._tails.values()))
