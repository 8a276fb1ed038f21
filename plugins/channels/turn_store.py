"""Where the turn recorder puts an admin session's turns: one Conversation, one Message per turn.

Written directly, under the admin session's principal, rather than handed to an agent: the walk
already has every turn, and a deterministic write is idempotent, costs no model call and works
without the Claude CLI. A Message's id comes from the account, the session and the turn's own
transcript id (the user record's ``uuid``, the assistant message's ``id``), so a re-run of the
hook (every Stop walks the whole transcript) writes only the turns that are new or changed.

The Conversation is the session's (named by the session id, else holding it as ``sessionId``,
the rule the tool-call audit follows, so a session's ToolCalls and turns hang together), else
one created with the session id. Texts and tool calls pass :mod:`plughost.util.redact` first; each tool
call's input and output are cut at :data:`CALL_CHARS` characters.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from plughost import GraphStore, Guards
from plughost.api.store import (
    CONVERSATION_LABEL,
    HAS_MESSAGE,
    MESSAGE_LABEL,
    guarded_upsert_many,
    session_conversation,
)
from plughost.api.util import redact_text, redact_value
from plughost.plugins.channels.wire import JSON, JSONObject

CHANNEL = "claude-code"
CALL_CHARS = 2000
COMPARED = ("role", "text", "toolCalls", "sentAt")


@dataclass
class Recorded:
    conversation: str
    created: bool
    new: list[str]
    changed: list[str]
    unchanged: int


def message_id(account: str, session_id: str, key: str) -> str:
    return "msg-" + hashlib.sha256("\x1f".join(("turn", account, session_id, key)).encode("utf-8",
                                                                                        "surrogatepass")).hexdigest()[:32]


def _clip(value: JSON) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= CALL_CHARS else f"{text[:CALL_CHARS]}…[+{len(text) - CALL_CHARS} chars]"


def _calls(calls: Sequence[JSONObject]) -> str:
    """A turn's tool calls as redacted JSON text (``[{tool, input, output}]``)."""
    return json.dumps([{"tool": c.get("tool"), "input": _clip(redact_value(c.get("input"))),
                        "output": None if c.get("output") is None else _clip(redact_value(c.get("output")))}
                       for c in calls], ensure_ascii=False)


def turn_properties(turn: JSONObject, conversation: str, session_id: str, index: int) -> JSONObject:
    """The stored form of one walked turn (``{role, text, ts, toolCalls?}``)."""
    calls = turn.get("toolCalls") or []
    text = redact_text(turn.get("text") or "")
    if not text.strip() and calls:  # a turn that only called tools is still findable by them
        text = "(tools: " + ", ".join(str(c.get("tool")) for c in calls) + ")"
    props: JSONObject = {"role": turn["role"], "text": text, "conversationId": conversation,
                             "sentAt": turn.get("ts"), "sessionId": session_id, "channel": CHANNEL,
                             "sender": turn["role"], "scope": "admin", "source": "turn-recorder", "turnIndex": index}
    if calls:
        props["toolCalls"] = _calls(calls)
    return {k: v for k, v in props.items() if v is not None}


def record(store: GraphStore, guards: Guards, session_id: str, turns: Sequence[tuple[str, JSONObject]],
           runner_session: str | None = None) -> Recorded:
    """Write the keyed turns (oldest first) that are new or changed, in one transaction."""
    account = guards.account_id
    conversation, created = session_conversation(store, guards, [s for s in (session_id, runner_session) if s])
    rows: list[JSONObject] = []
    new: list[str] = []
    changed: list[str] = []
    unchanged = 0
    for index, (key, turn) in enumerate(turns):
        mid = message_id(account, session_id, key)
        props = turn_properties(turn, conversation, session_id, index)
        prior = store.get(mid, guards=guards, include_deleted=True)
        if prior is not None and (prior.deleted or all(prior.properties.get(k) == props.get(k) for k in COMPARED)):
            unchanged += 1  # the same turn again, or one an admin deleted: left as it is
            continue
        (changed if prior is not None else new).append(mid)
        rows.append({"id": mid, "labels": [MESSAGE_LABEL], "properties": props})
    if not rows:
        return Recorded(conversation, False, [], [], unchanged)
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    conv_props: JSONObject = {"lastMessageAt": rows[-1]["properties"].get("sentAt") or now}
    if created:
        conv_props.update(sessionId=session_id, startedAt=rows[0]["properties"].get("sentAt") or now, scope="admin",
                          channel=CHANNEL, title=f"{CHANNEL} session {session_id[:8]}")
    rows.append({"id": conversation, "labels": [CONVERSATION_LABEL], "properties": conv_props,
                 "edges": [{"type": HAS_MESSAGE, "to": mid} for mid in new]})
    guarded_upsert_many(store, rows, guards=guards)
    return Recorded(conversation, created, new, changed, unchanged)
