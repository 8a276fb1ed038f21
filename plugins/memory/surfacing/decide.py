"""What a surfacing hook input asks for: the request, or the reason to skip, and the log fields.

Shared by the hook process (``client.py``, run as a script with only the standard library) and
the warm server's hook route (``server.py``), so both skip the same prompts for the same reasons
and log the same ``[surface] op=hook`` fields.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if __package__:
    from plughost.plugins.memory.surfacing import context, rules, sessions
else:  # run as a script: the sibling stdlib-only modules, without the host on sys.path
    import context  # type: ignore[no-redef,import-not-found]
    import rules  # type: ignore[no-redef,import-not-found]
    import sessions  # type: ignore[no-redef,import-not-found]

MAX_STDIN = 1 << 20
TOOL_EVENTS = ("PostToolUse", "PostToolUseFailure")  # the audit trail (plugins/memory/toolcalls/trail.py)
COMPACT_EVENTS = ("PreCompact", "SessionStart")  # compaction briefings (plugins/memory/sessions/compaction.py)
SESSION_SOURCES = ("startup", "compact", "resume")
"""SessionStart sources answered: compact|resume inject the briefing, startup|resume the owner's open
work (plugins/memory/sessions/context.py)."""

_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:/@,[]()+*#%<>=!?~^|&'")


def _fmt(value: Any) -> str:
    """plughost.util.log's value rendering (kept here so the warm path never imports the host)."""
    text = "—" if value is None else ("true" if value is True else "false" if value is False else str(value))
    if text and all(ch in _SAFE or ord(ch) > 127 and not ch.isspace() for ch in text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def clean(value: Any) -> Any:
    """The hook input with every string valid UTF-8: JSON may spell a lone surrogate (``"\\udcff"``),
    which no file, log or socket can encode; each becomes U+FFFD."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        return value
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v) for v in value]
    return value


def build_request(hook: Mapping[str, Any], ctx: context.Context) -> dict[str, Any]:
    def text(name: str) -> str:
        value = hook.get(name)
        return value if isinstance(value, str) else ""

    if hook.get("hook_event_name") in TOOL_EVENTS:
        return {"op": "tool-call", "sessionId": text("session_id"), "transcriptPath": text("transcript_path"),
                "toolName": text("tool_name"), "toolInput": hook.get("tool_input"),
                "toolResponse": hook.get("tool_response", hook.get("error")), "toolUseId": text("tool_use_id") or None,
                "isError": True if hook.get("hook_event_name") == "PostToolUseFailure" else None,
                "runnerSession": ctx.runner_session, **ctx.as_json()}
    if hook.get("hook_event_name") in COMPACT_EVENTS:
        return {"op": "compaction", "event": hook.get("hook_event_name"), "sessionId": text("session_id"),
                "transcriptPath": text("transcript_path"), "source": text("source"), "trigger": text("trigger"),
                **ctx.as_json()}
    if hook.get("hook_event_name") == "Stop":
        return {"op": "recall", "sessionId": text("session_id"), "transcriptPath": text("transcript_path"),
                **ctx.as_json()}
    return {"sessionId": text("session_id"), "prompt": text("prompt"), "cwd": text("cwd") or None,
            "budget": ctx.budget, "limit": ctx.limit, **ctx.as_json()}


def plan(hook: Mapping[str, Any] | None, ctx: context.Context | None) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The request for the server, or None and the skip's ``[surface] op=hook`` fields.

    Shared by this process and the warm server's hook route (``server.answer_hook``), so both
    skip the same prompts for the same reasons.
    """
    if hook is None:
        return None, {"path": "skip", "reason": "stdin-not-a-json-object"}
    if ctx is None:
        return None, {"path": "skip", "reason": "no-account"}
    if not os.path.isdir(ctx.home):  # nothing installed there: create nothing (no store, logs or sessions)
        return None, {"path": "skip", "reason": "no-home", "where": ctx.home}
    hook = clean(hook)
    event = hook.get("hook_event_name")
    if event in TOOL_EVENTS or event in COMPACT_EVENTS:  # admin sessions only, decided before any round trip
        if ctx.role not in (None, "admin") or ctx.scopes is not None or ctx.agent:
            return None, {"path": "skip", "event": event, "reason": "not-admin"}
        if event == "SessionStart" and hook.get("source") not in SESSION_SOURCES:
            return None, {"path": "skip", "event": event, "reason": "source"}
    elif event == "Stop":  # recall tracking: only sessions that were shown memory
        sid = hook.get("session_id")
        if not isinstance(sid, str) or not sid or not os.path.exists(
                sessions.session_path(Path(ctx.home), ctx.account_id, sid)):
            return None, {"path": "skip", "event": "Stop", "reason": "nothing-surfaced"}
    else:
        prompt = hook.get("prompt") if isinstance(hook.get("prompt"), str) else ""
        first = rules.decide(prompt or "", "-")  # "-": would it be worth a search even as a follow-up?
        if first.query is None:
            return None, {"path": "skip", "reason": first.reason}
    return build_request(hook, ctx), {}


def outcome(hook: Mapping[str, Any], request: Mapping[str, Any], reply: Mapping[str, Any],
            path: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """What the hook prints (None: nothing) and its ``[surface] op=hook`` fields, from the reply."""
    if not reply.get("ok"):
        return None, {"path": path, "result": "error", "reason": reply.get("error"), "detail": reply.get("detail")}
    output = reply.get("output") if isinstance(reply.get("output"), dict) else None
    op = request.get("op")
    if op == "compaction":
        return output, {"path": path, "event": hook.get("hook_event_name"), "result": "ok",
                        "stored": reply.get("stored"), "injected": output is not None}
    if op == "tool-call":
        return None, {"path": path, "event": hook.get("hook_event_name"), "result": "ok",
                      "recorded": reply.get("recorded")}
    if op == "recall":
        return None, {"path": path, "event": "Stop", "result": "ok", "reason": reply.get("reason"),
                      "used": len(reply.get("used") or [])}
    return output, {"path": path, "result": "ok", "reason": reply.get("reason"), "items": reply.get("items", 0)}


def fields_text(fields: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={_fmt(v)}" for k, v in fields.items())
