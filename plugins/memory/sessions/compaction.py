"""Compaction briefings: what an admin conversation must not forget when Claude Code compacts it.

``session-compact`` (the agent's structured briefing), the ``PreCompact`` hook (a deterministic
fallback from the transcript when the agent stored none in the last ``FRESH_MINUTES``) and the
``SessionStart`` hook (sources ``compact`` and ``resume``: the latest briefing back as
``additionalContext``). A ``Briefing`` node hangs from the Conversation by ``HAS_BRIEFING``.

A briefing reaches only the session and role that wrote it, once: it records the writer's
``sessionId`` and ``writerRole``; SessionStart (an admin session's hook) injects only an admin's
briefing of that very session that was not injected before (``injectedAt``), so a resume on
every runner turn does not repeat it and a briefing a confined role wrote never reaches the owner.
Lines: ``[compaction] op=captured|fallback|injected conversation=<8> ..``.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from plughost import Guards, Principal, Tool, UserError, WriteDenied, log
from plughost.api.store import CONVERSATION_LABEL, guarded_upsert_many, session_conversation
from plughost.api.util import read_time, redact_text
from plughost.plugins.memory.toolcalls.trail import TOOL_CALL_LABEL
from plughost.plugins.memory.transcript_tail import read_tail

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

BRIEFING_LABEL = "Briefing"
HAS_BRIEFING = "HAS_BRIEFING"
FIELDS = ("asked", "done", "decisions", "inProgress", "aboutPerson")
FIELD_MAX = 2000
FRESH_MINUTES = 30
CONTEXT_MAX = 6000
ADMIN_WRITERS = ("owner", "admin-session", "operator")
"""Writer roles whose briefings an admin session is given back (``plughost.ports.principal.Role`` values)."""


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(when: datetime) -> str:
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(value: Any) -> str:
    if isinstance(value, list):
        value = "\n".join(f"- {v}" for v in value if isinstance(v, str) and v.strip())
    return redact_text(value.strip())[:FIELD_MAX] if isinstance(value, str) else ""


def store_briefing(host: Host, guards: Guards, conversation: str, briefing: dict[str, Any], source: str,
                   session_id: str | None = None, role: str = "owner") -> str:
    when = _iso(_now())
    node_id = "briefing-" + hashlib.sha256("\x1f".join((guards.account_id, conversation, when, source))
                                           .encode()).hexdigest()[:32]
    props: dict[str, Any] = {k: _text(briefing.get(k)) for k in FIELDS}
    props.update(conversationId=conversation, source=source, capturedAt=when, sessionId=session_id, writerRole=role)
    if not guards.narrowed:
        props["scope"] = "admin"
    exists = host.store().get(conversation, guards=guards) is not None
    rows: list[dict[str, Any]] = [{"id": node_id, "labels": [BRIEFING_LABEL],
                                   "properties": {k: v for k, v in props.items() if v not in (None, "")}}]
    conv: dict[str, Any] = {"id": conversation, "labels": [CONVERSATION_LABEL],
                            "properties": {"lastBriefingAt": when}, "edges": [{"type": HAS_BRIEFING, "to": node_id}]}
    if not exists:
        conv["properties"].update(sessionId=session_id or conversation, startedAt=when,
                                  **({} if guards.narrowed else {"scope": "admin"}))  # else its own scope
    rows.append(conv)
    try:
        guarded_upsert_many(host.store(), rows, guards=guards)
    except WriteDenied as exc:
        raise UserError(f"session-compact: {exc} ({exc.reason})") from None
    log("compaction", f"op={'captured' if source == 'agent' else 'fallback'}", conversation=conversation[:8],
        briefing=node_id[9:17])
    return node_id


def latest(host: Host, guards: Guards, conversation: str) -> Any:
    """The conversation's newest briefing an admin wrote (for an admin reader: a briefing a
    confined role wrote neither comes back nor stands in for the owner's fallback)."""
    found = host.store().find(guards=guards, labels=[BRIEFING_LABEL], where={"conversationId": conversation},
                              order_by="capturedAt", descending=True, limit=50)
    if guards.narrowed:
        return found[0] if found else None
    return next((n for n in found if by_admin(n.properties)), None)


def by_admin(p: dict[str, Any]) -> bool:
    return p.get("writerRole", "owner") in ADMIN_WRITERS and p.get("scope") == "admin"


def conversation_for(host: Host, guards: Guards, session_id: str) -> str:
    """The session's Conversation (:func:`plughost.ports.graph.session_conversation`), else the session id itself."""
    return session_conversation(host.store(), guards, [session_id])[0]


def fallback_from_transcript(path: str | None) -> dict[str, Any]:
    """A deterministic briefing: the last user prompts, the last assistant text, the tools used."""
    asked: list[str] = []
    said: list[str] = []
    tools: list[str] = []
    raw = read_tail(path)[0] or b""  # a regular file's last 2 MiB only (the path came from stdin)
    for line in raw.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        msg = rec.get("message") if isinstance(rec, dict) else None
        if not isinstance(msg, dict) or rec.get("isSidechain") or rec.get("isMeta"):
            continue
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else \
            [b for b in content or [] if isinstance(b, dict)] if isinstance(content, list) else []
        for b in blocks:
            if b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"].strip():
                (asked if rec.get("type") == "user" else said).append(b["text"].strip()[:400])
            elif b.get("type") == "tool_use" and isinstance(b.get("name"), str) and b["name"] not in tools:
                tools.append(b["name"])
    return {"asked": asked[-3:], "done": ([said[-1]] if said else []) + ([f"tools used: {', '.join(tools[:20])}"]
                                                                        if tools else []),
            "decisions": [], "inProgress": "", "aboutPerson": ""}


def render(node: Any) -> str:
    p = node.properties
    parts = [f"Briefing from before the context was compacted ({p.get('source')}, {p.get('capturedAt')}):"]
    for key, title in (("asked", "What was asked"), ("done", "What was done"), ("decisions", "Decisions"),
                       ("inProgress", "Work in progress"), ("aboutPerson", "About the person")):
        if p.get(key):
            parts.append(f"{title}:\n{p[key]}")
    return "\n\n".join(parts)[:CONTEXT_MAX]


def on_pre_compact(host: Host, account: str, session_id: str, transcript: str | None) -> dict[str, Any]:
    guards = Principal.owner(account).guards
    conversation = conversation_for(host, guards, session_id)
    prior = latest(host, guards, conversation)
    if prior is not None and prior.properties.get("source") == "agent":
        captured = read_time(prior.properties.get("capturedAt"))
        age = _now() - captured if captured is not None else timedelta(days=1)
        if age < timedelta(minutes=FRESH_MINUTES):
            log("compaction", "op=captured", conversation=conversation[:8], reason="agent-briefing-fresh")
            return {"stored": False, "reason": "agent-briefing-fresh"}
    node = store_briefing(host, guards, conversation, fallback_from_transcript(transcript), "fallback", session_id)
    return {"stored": True, "id": node}


def _planted(host: Host, guards: Guards, conversation: str) -> bool:
    """Whether the conversation holds briefings, none an admin's (logged as ``result=not-admin``)."""
    return bool(host.store().find(guards=guards, labels=[BRIEFING_LABEL], where={"conversationId": conversation},
                                  limit=1))


def on_session_start(host: Host, account: str, session_id: str, source: str) -> dict[str, Any]:
    guards = Principal.owner(account).guards
    conversation = conversation_for(host, guards, session_id)
    node = latest(host, guards, conversation)
    p = node.properties if node is not None else {}
    if node is None:
        why: str | None = "not-admin" if _planted(host, guards, conversation) else "none"
    else:
        why = ("already-injected" if p.get("injectedAt")
               else "other-session" if p.get("sessionId") not in (None, session_id) else None)
    if node is None or why is not None:
        log("compaction", "op=injected", conversation=conversation[:8], result=why, source=source)
        return {"output": None}
    host.store().upsert_node([BRIEFING_LABEL], {"injectedAt": _iso(_now())}, node_id=node.id,
                             guards=guards)
    log("compaction", "op=injected", conversation=conversation[:8], briefing=node.id[9:17], source=source)
    return {"output": {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": render(node)}}}


def session_compact(host: Host, *, conversationId: str | None = None, **briefing: Any) -> dict[str, Any]:  # noqa: N803
    """The agent's briefing, against the named conversation, the process's session, else the
    conversation of the account's latest recorded tool call (this very session, in Claude Code)."""
    principal = host.principal
    guards = principal.guards
    if not any(_text(briefing.get(k)) for k in FIELDS):
        raise UserError(f"briefing: expected at least one of {', '.join(FIELDS)}")
    conversation = conversationId
    if principal.session:  # a confined session briefs its own conversation only
        own = conversation_for(host, guards, principal.session)
        if conversation is not None and conversation != own:
            raise UserError("conversationId: not this session's conversation; a confined session briefs only its own")
        conversation = own
    if conversation is None:
        calls = host.store().find(guards=guards, labels=[TOOL_CALL_LABEL], order_by="completedAt", limit=1)
        conversation = calls[0].properties.get("conversationId") if calls else None
    if not conversation:
        raise UserError("conversationId: none given and this process has no session or recorded conversation")
    node = store_briefing(host, guards, conversation, briefing, "agent", principal.session_key, principal.role.value)
    return {"briefingId": node, "conversationId": conversation}


def compaction_tools(host: Host) -> list[Tool]:
    def compact(**args: Any) -> Any:
        return session_compact(host, **args)

    return [Tool("session-compact", compact)]
