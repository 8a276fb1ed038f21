"""The turn recorder (docs/channels.md#turn-recorder): a Claude Code Stop hook, ``plughost record-turn``.

Reads the Stop-hook stdin ``{session_id, transcript_path, ...}``, walks the JSONL transcript
into ordered turns (user and assistant texts, each assistant turn's tool calls with their
outputs) and stores them in the account's graph under the admin session's principal
(:mod:`plughost.plugins.channels.turn_store`): idempotent per turn, so the whole transcript can go in
every time (no windowing). Only admin sessions are recorded. A Stop hook must never break the
session: every path returns exit code 0 and says why in a ``[turn-recorder]`` line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from plughost import Host, Principal, Role, UserError, log
from plughost.api import hooks
from plughost.api.accounts import require_existing
from plughost.api.principals import resolve
from plughost.plugins.channels.turn_store import record
from plughost.plugins.channels.wire import JSON, JSONMapping, JSONObject

SKIP_REASONS = ("role-not-admin", "no-account", "unknown-account", "empty-stdin", "no-session", "missing-transcript",
                "conversation-empty")


@dataclass
class WalkStats:
    records: int = 0
    malformed: int = 0
    skipped: int = 0


@dataclass
class _Turn:
    role: str
    ts: str | None
    key: str | None = None  # the transcript's own id for the turn: a user record's uuid, an assistant message's id
    texts: list[str] = field(default_factory=list)
    calls: list[JSONObject] = field(default_factory=list)

    def render(self) -> JSONObject | None:
        text = "\n".join(t for t in self.texts if t)
        if not text and not self.calls:
            return None
        out: JSONObject = {"role": self.role, "text": text, "ts": self.ts}
        if self.calls:
            out["toolCalls"] = [{"tool": c["tool"], "input": c["input"], "output": c["output"]} for c in self.calls]
        return out


def _blocks(content: JSON) -> list[JSONObject]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _tool_output(block: JSONMapping) -> JSON:
    """A tool_result's content as a native value: a string, or the text of its text blocks."""
    content = block.get("content")
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if len(texts) == len(content):
            return "\n".join(texts)
        return content
    return content


def parse_lines(raw: bytes) -> Iterable[JSONObject | None]:
    """Each JSONL line as a dict (None for a malformed line); bad UTF-8 is replaced, never fatal."""
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            yield None
            continue
        yield value if isinstance(value, dict) else None


def walk(raw: bytes) -> tuple[list[JSONObject], WalkStats]:
    """Transcript bytes → ordered turns (oldest first), per docs/channels.md#turn-recorder."""
    keyed, stats = walk_keyed(raw)
    return [turn for _, turn in keyed], stats


def walk_keyed(raw: bytes) -> tuple[list[tuple[str, JSONObject]], WalkStats]:
    """:func:`walk`'s turns, each with a key stable across re-runs (its transcript id, else its place)."""
    stats = WalkStats()
    turns: list[_Turn] = []
    by_message_id: dict[str, _Turn] = {}
    by_tool_id: dict[str, JSONObject] = {}
    for rec in parse_lines(raw):
        if rec is None:
            stats.malformed += 1
            continue
        stats.records += 1
        kind = rec.get("type")
        msg = rec.get("message")
        if kind not in ("user", "assistant") or not isinstance(msg, dict) or rec.get("isSidechain"):
            stats.skipped += 1
            continue
        ts = rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else None
        blocks = _blocks(msg.get("content"))
        if kind == "assistant":
            _assistant_blocks(_assistant_turn(rec, msg, ts, turns, by_message_id), blocks, by_tool_id)
            continue
        if rec.get("isMeta") or rec.get("isCompactSummary"):  # command caveats, compaction summaries
            stats.skipped += 1
            continue
        texts = _user_blocks(blocks, by_tool_id)
        if any(t.strip() for t in texts):
            turns.append(_Turn("user", ts, _uuid(rec), texts))
    keyed = [(t.key or f"{t.role}:{i}:{t.ts}", r) for i, t in enumerate(turns) if (r := t.render()) is not None]
    return keyed, stats


def _assistant_turn(rec: JSONMapping, msg: JSONMapping, ts: str | None, turns: list[_Turn],
                    by_message_id: dict[str, _Turn]) -> _Turn:
    """The assistant turn a record adds to: the one of its message id (a message spans records), else a new one."""
    mid = msg.get("id")
    turn = by_message_id.get(mid) if isinstance(mid, str) else None
    if turn is None:
        turn = _Turn("assistant", ts, mid if isinstance(mid, str) else _uuid(rec))
        turns.append(turn)
        if isinstance(mid, str):
            by_message_id[mid] = turn
    return turn


def _assistant_blocks(turn: _Turn, blocks: list[JSONObject], by_tool_id: dict[str, JSONObject]) -> None:
    """An assistant record's texts and tool calls, onto its turn (each call findable by its tool-use id)."""
    for b in blocks:
        if b.get("type") == "text" and isinstance(b.get("text"), str):
            turn.texts.append(b["text"])
        elif b.get("type") == "tool_use":
            call = {"tool": b.get("name"), "input": b.get("input"), "output": None}
            turn.calls.append(call)
            if isinstance(b.get("id"), str):
                by_tool_id[b["id"]] = call


def _user_blocks(blocks: list[JSONObject], by_tool_id: dict[str, JSONObject]) -> list[str]:
    """A user record's texts; its tool results go onto the calls they answer."""
    texts: list[str] = []
    for b in blocks:
        if b.get("type") == "tool_result":
            called = by_tool_id.get(b.get("tool_use_id"))  # type: ignore[arg-type]
            if called is not None:
                called["output"] = _tool_output(b)
        elif b.get("type") == "text" and isinstance(b.get("text"), str):
            texts.append(b["text"])
    return texts


def _uuid(rec: JSONMapping) -> str | None:
    value = rec.get("uuid")
    return value if isinstance(value, str) and value else None


def _skip(reason: str, **fields: object) -> int:
    log("turn-recorder", "trigger-skipped", reason=reason, **fields)
    return 0


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def record_turn(stdin: bytes, env: Mapping[str, str], host: Host | Callable[[], Host] | None = None) -> int:
    """The hook body. Returns 0 always; ``host`` (lazy) supplies the store when a turn is recorded."""
    try:
        return _record_turn(stdin, env, host)
    except Exception as exc:  # a Stop hook never fails the session
        log("turn-recorder", "record-failed", reason="internal", detail=_first_line(exc))
        return 0


def _admin(env: Mapping[str, str]) -> Principal | int:
    """The acting principal when it is an admin session of an existing account, else the skip's 0."""
    principal = resolve(env)
    if principal.role is not Role.ADMIN_SESSION:
        return _skip("role-not-admin")
    if not principal.account:
        return _skip("no-account")
    try:
        require_existing(principal.account, env)
    except UserError:
        return _skip("unknown-account", account=principal.account[:40])
    return principal


def _transcript(stdin: bytes) -> tuple[str, bytes] | int:
    """The hook input's session id and its transcript's bytes, else the skip's 0."""
    if not stdin.strip():
        return _skip("empty-stdin")
    try:
        hook_input = json.loads(stdin.decode("utf-8", "replace"))
    except ValueError:
        hook_input = None
    if not isinstance(hook_input, dict):
        return _skip("empty-stdin", detail="stdin-not-a-json-object")
    session_id = str(hook_input.get("session_id") or "")[:200]
    path = hook_input.get("transcript_path")
    if not session_id:
        return _skip("no-session")
    if not isinstance(path, str) or not path:
        return _skip("missing-transcript", sessionId=session_id)
    try:
        return session_id, Path(path).expanduser().read_bytes()
    except (OSError, ValueError):
        return _skip("missing-transcript", sessionId=session_id)


def _record_turn(stdin: bytes, env: Mapping[str, str], host: Host | Callable[[], Host] | None) -> int:
    principal = _admin(env)
    if isinstance(principal, int):
        return principal
    found = _transcript(stdin)
    if isinstance(found, int):
        return found
    session_id, raw = found
    keyed, stats = walk_keyed(raw)
    if stats.malformed:
        log("turn-recorder", "malformed-lines", sessionId=session_id, count=stats.malformed)
    if not keyed:
        return _skip("conversation-empty", sessionId=session_id)
    turns = [t for _, t in keyed]
    log("turn-recorder", "trigger", sessionId=session_id, transcriptBytes=len(raw))
    log("turn-recorder", "walked", sessionId=session_id, turnsCount=len(turns),
        userTurns=sum(1 for t in turns if t["role"] == "user"),
        assistantTurns=sum(1 for t in turns if t["role"] == "assistant"),
        toolCallTurns=sum(1 for t in turns if t.get("toolCalls")))
    if host is None:
        return 0
    _store(host() if callable(host) else host, principal, session_id, keyed)
    return 0


def _store(host: Host, principal: Principal, session_id: str, keyed: list[tuple[str, JSONObject]]) -> None:
    """The walked turns into the store; the stored messages announced to ``messages_stored``."""
    started = time.perf_counter()
    try:
        done = record(host.store(), principal.guards, session_id, keyed, runner_session=principal.session_key)
    except Exception as exc:
        log("turn-recorder", "record-failed", sessionId=session_id, reason="store", detail=_first_line(exc))
        return
    log("turn-recorder", "recorded", sessionId=session_id, conversation=done.conversation[:40],
        created=int(done.created), new=len(done.new), changed=len(done.changed), unchanged=done.unchanged,
        ms=round((time.perf_counter() - started) * 1000))
    if done.new or done.changed:
        host.call_each(hooks.MESSAGES_STORED, account_id=principal.account, message_ids=done.new + done.changed)


def cli_run(host: Host) -> int:
    """``plughost record-turn``: stdin from the process, env from the host (or the process)."""
    try:
        data = sys.stdin.buffer.read() if not sys.stdin.isatty() else b""
    except (OSError, ValueError):
        data = b""
    env = dict(getattr(host, "env", None) or os.environ)
    return record_turn(data, env, host)
