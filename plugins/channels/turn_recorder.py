"""The turn recorder (SPEC 10.6): a Claude Code Stop hook, ``plughost record-turn``.

Reads the Stop-hook stdin ``{session_id, transcript_path, ...}``, walks the JSONL transcript
into ``{turns, conversationId, accountId, occurredAt}`` and dispatches the recorder
specialist through the agent runner. The whole transcript goes in every time (no windowing),
so ``turnsCount`` grows monotonically across one session. A Stop hook must never break the
session: every path returns exit code 0 and says why in a ``[turn-recorder]`` line.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from host.log import log

RECORDER_SPECIALIST = "database-operator"
SKIP_REASONS = ("role-not-admin", "is-recorder", "empty-stdin", "missing-transcript", "conversation-empty")


@dataclass
class WalkStats:
    records: int = 0
    malformed: int = 0
    skipped: int = 0


@dataclass
class _Turn:
    role: str
    ts: str | None
    texts: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)

    def render(self) -> dict[str, Any] | None:
        text = "\n".join(t for t in self.texts if t)
        if not text and not self.calls:
            return None
        out: dict[str, Any] = {"role": self.role, "text": text, "ts": self.ts}
        if self.calls:
            out["toolCalls"] = [{"tool": c["tool"], "input": c["input"], "output": c["output"]} for c in self.calls]
        return out


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _tool_output(block: Mapping[str, Any]) -> Any:
    """A tool_result's content as a native value: a string, or the text of its text blocks."""
    content = block.get("content")
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if len(texts) == len(content):
            return "\n".join(texts)
        return content
    return content


def parse_lines(raw: bytes) -> Iterable[dict[str, Any] | None]:
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


def walk(raw: bytes) -> tuple[list[dict[str, Any]], WalkStats]:
    """Transcript bytes → ordered turns (oldest first), per SPEC 10.6."""
    stats = WalkStats()
    turns: list[_Turn] = []
    by_message_id: dict[str, _Turn] = {}
    by_tool_id: dict[str, dict[str, Any]] = {}
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
            mid = msg.get("id")
            turn = by_message_id.get(mid) if isinstance(mid, str) else None
            if turn is None:
                turn = _Turn("assistant", ts)
                turns.append(turn)
                if isinstance(mid, str):
                    by_message_id[mid] = turn
            for b in blocks:
                if b.get("type") == "text" and isinstance(b.get("text"), str):
                    turn.texts.append(b["text"])
                elif b.get("type") == "tool_use":
                    call = {"tool": b.get("name"), "input": b.get("input"), "output": None}
                    turn.calls.append(call)
                    if isinstance(b.get("id"), str):
                        by_tool_id[b["id"]] = call
            continue
        if rec.get("isMeta") or rec.get("isCompactSummary"):  # command caveats, compaction summaries
            stats.skipped += 1
            continue
        texts: list[str] = []
        for b in blocks:
            if b.get("type") == "tool_result":
                called = by_tool_id.get(b.get("tool_use_id"))  # type: ignore[arg-type]
                if called is not None:
                    called["output"] = _tool_output(b)
            elif b.get("type") == "text" and isinstance(b.get("text"), str):
                texts.append(b["text"])
        if any(t.strip() for t in texts):
            turns.append(_Turn("user", ts, texts))
    rendered = [r for r in (t.render() for t in turns) if r is not None]
    return rendered, stats


def envelope(turns: list[dict[str, Any]], session_id: str, account_id: str | None,
             now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    return {
        "turns": turns,
        "conversationId": session_id,
        "accountId": account_id,
        "occurredAt": now.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
    }


def _skip(reason: str, **fields: Any) -> int:
    log("turn-recorder", "trigger-skipped", reason=reason, **fields)
    return 0


def record_turn(stdin: bytes, env: Mapping[str, str], host: Any = None) -> int:
    """The hook body. Returns 0 always; ``host`` (lazy) supplies the runner when a turn is recorded."""
    try:
        return _record_turn(stdin, env, host)
    except Exception as exc:  # a Stop hook never fails the session
        log("turn-recorder", "spawn-failed", reason="internal", detail=str(exc).splitlines()[0][:200] if str(exc) else
            type(exc).__name__)
        return 0


def _record_turn(stdin: bytes, env: Mapping[str, str], host: Any) -> int:
    specialist = env.get("PLUGHOST_RECORDER_SPECIALIST") or RECORDER_SPECIALIST
    from host.principal import Role, resolve

    principal = resolve(env)
    if principal.role is not Role.ADMIN_SESSION:
        return _skip("role-not-admin")
    if env.get("PLUGHOST_SPECIALIST") == specialist:
        return _skip("is-recorder")
    if not stdin.strip():
        return _skip("empty-stdin")
    try:
        hook_input = json.loads(stdin.decode("utf-8", "replace"))
    except ValueError:
        hook_input = None
    if not isinstance(hook_input, dict):
        return _skip("empty-stdin", detail="stdin-not-a-json-object")
    session_id = str(hook_input.get("session_id") or "")
    path = hook_input.get("transcript_path")
    if not isinstance(path, str) or not path:
        return _skip("missing-transcript", sessionId=session_id)
    try:
        raw = Path(path).expanduser().read_bytes()
    except OSError:
        return _skip("missing-transcript", sessionId=session_id)
    turns, stats = walk(raw)
    if stats.malformed:
        log("turn-recorder", "malformed-lines", sessionId=session_id, count=stats.malformed)
    if not turns:
        return _skip("conversation-empty", sessionId=session_id)
    env_account = principal.account
    body = envelope(turns, session_id, env_account)
    message = json.dumps(body, ensure_ascii=False)
    log("turn-recorder", "trigger", sessionId=session_id, turnIndex=0, transcriptBytes=len(raw),
        conversationBytes=len(message.encode("utf-8")))
    log("turn-recorder", "envelope", sessionId=session_id, turnsCount=len(turns),
        userTurns=sum(1 for t in turns if t["role"] == "user"),
        assistantTurns=sum(1 for t in turns if t["role"] == "assistant"),
        toolCallTurns=sum(1 for t in turns if t.get("toolCalls")))
    log("turn-recorder", "spawn-request", sessionId=session_id, specialist=specialist,
        initialMessageBytes=len(message.encode("utf-8")))
    if host is None:
        return 0
    host = host() if callable(host) else host
    from plugins.channels.runner import get_runner, session_id_for

    runner = get_runner(host)
    payload = {"specialist": specialist, "role": "admin", "model": env.get("PLUGHOST_RECORDER_MODEL", "haiku"),
               "initialMessage": message, "operatorSessionId": session_id, "accountId": env_account}
    recorder_session = session_id_for(env_account or "-", f"recorder:{session_id}")
    try:
        asyncio.run(runner.run(recorder_session, payload))
    except Exception as exc:
        log("turn-recorder", "spawn-failed", sessionId=session_id, reason="runner",
            detail=str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)
        return 0
    log("turn-recorder", "spawned", sessionId=session_id, specialist=specialist)
    return 0


def cli_run(host: Any) -> int:
    """``plughost record-turn``: stdin from the process, env from the host (or the process)."""
    import sys

    try:
        data = sys.stdin.buffer.read() if not sys.stdin.isatty() else b""
    except (OSError, ValueError):
        data = b""
    env = dict(getattr(host, "env", None) or os.environ)
    return record_turn(data, env, host)
