"""Claude and ChatGPT conversation exports (``conversations.json`` in the export's zip).

Claude: a list of ``{uuid, name, created_at, chat_messages: [{uuid, sender: human|assistant,
text | content, created_at, attachments, files}]}``. ChatGPT: a list of ``{id, title,
create_time, mapping: {node: {message: {author: {role}, content: {parts}, create_time}, parent,
children}}, current_node}``; the kept branch is the walk from ``current_node`` up to the root
(an edited question leaves its other branches behind, as the ChatGPT UI shows it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from plughost.plugins.memory.archives.model import ArchiveError, Parsed, Thread, Turn, attachment, iso

ROLES = {"human": "user", "assistant": "assistant"}


def load_json(name: str, data: bytes) -> list[Any]:
    try:
        value = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ArchiveError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ArchiveError(f"{name}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg})") from None
    if not isinstance(value, list):
        raise ArchiveError(f"{name}: expected a JSON list of conversations, got {type(value).__name__}")
    return value


def kind(items: list[Any]) -> str | None:
    """``claude`` or ``chatgpt`` by the first conversation's keys (None: neither)."""
    for item in items[:5]:
        if isinstance(item, dict) and "chat_messages" in item:
            return "claude"
        if isinstance(item, dict) and "mapping" in item:
            return "chatgpt"
    return None


def _time(value: Any, where: str) -> str | None:
    if value in (None, ""):
        return None
    try:
        if isinstance(value, (int, float)):
            return iso(datetime.fromtimestamp(float(value), UTC))
        at = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        raise ValueError(f"{where}: expected a time, got {str(value)[:40]!r}") from None
    return iso(at if at.tzinfo else at.replace(tzinfo=UTC))


def _claude_text(msg: dict[str, Any]) -> str:
    text = msg.get("text")
    if isinstance(text, str) and text.strip():
        return text
    parts = msg.get("content")
    if isinstance(parts, list):  # newer exports: [{type: text, text}, {type: tool_use, ...}]
        return "\n\n".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _claude_turn(msg: Any, at: str, started: str | None) -> Turn | None:
    """One Claude message as a turn (None when it says nothing and carries nothing)."""
    if not isinstance(msg, dict):
        raise ValueError(f"{at}: expected a message object")
    sender = msg.get("sender")
    if sender not in ROLES:
        raise ValueError(f"{at}.sender: expected 'human' or 'assistant', got {str(sender)[:20]!r}")
    files = [attachment(str(a.get("file_name") or "attachment"), a.get("file_size"))
             for a in (msg.get("attachments") or []) if isinstance(a, dict)]
    files += [attachment(str(f.get("file_name") or "file")) for f in (msg.get("files") or [])
              if isinstance(f, dict)]
    text = _claude_text(msg)
    if not text.strip() and not files:
        return None
    return Turn(str(msg.get("uuid") or "") or None, "Claude" if sender == "assistant" else "me",
                ROLES[sender], _time(msg.get("created_at"), f"{at}.created_at") or started, text, files)


def _claude_thread(name: str, conv: Any, where: str) -> Thread:
    if not isinstance(conv, dict):
        raise ValueError(f"{where}: expected a conversation object")
    uuid = conv.get("uuid")
    if not isinstance(uuid, str) or not uuid:
        raise ValueError(f"{where}.uuid: expected the conversation's id")
    msgs = conv.get("chat_messages")
    if not isinstance(msgs, list):
        raise ValueError(f"{where}.chat_messages: expected a list")
    started = _time(conv.get("created_at"), f"{where}.created_at")
    thread = Thread(uuid, str(conv.get("name") or "").strip() or "Claude conversation", source=name)
    for j, msg in enumerate(msgs):
        turn = _claude_turn(msg, f"{where}.chat_messages[{j}]", started)
        if turn is not None:
            thread.turns.append(turn)
    return thread


def _each(name: str, items: list[Any], thread: Callable[[str, Any, str], Thread]) -> Parsed:
    """Every conversation through ``thread``; one that does not read is skipped with its reason."""
    out = Parsed()
    for i, conv in enumerate(items):
        try:
            got = thread(name, conv, f"{name}: [{i}]")
        except ValueError as exc:
            out.skipped.append(str(exc))
            continue
        if got.turns:
            out.threads.append(got)
    return out


def parse_claude(name: str, items: list[Any]) -> Parsed:
    return _each(name, items, _claude_thread)


def _chatgpt_text(content: Any) -> tuple[str, list[str]]:
    if not isinstance(content, dict):
        return "", []
    parts = content.get("parts")
    if not isinstance(parts, list):
        text = content.get("text")
        return (text if isinstance(text, str) else ""), []
    texts, files = [], []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("content_type") == "image_asset_pointer":
            files.append(attachment("image", part.get("size_bytes")))
    return "\n".join(t for t in texts if t), files


def _chatgpt_chain(mapping: dict[str, Any], node_id: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    """The kept branch, leaf first: the walk from ``node_id`` (else the newest leaf) up to the root."""
    if node_id is None:  # no current node: the newest leaf
        leaves = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("children")]
        node_id = leaves[-1] if leaves else None
    chain: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    while node_id is not None:
        if node_id in seen:
            raise ValueError(f"{where}.mapping: the parent links loop at {str(node_id)[:40]!r}")
        seen.add(node_id)
        node = mapping.get(node_id)
        if not isinstance(node, dict):
            raise ValueError(f"{where}.mapping.{str(node_id)[:40]}: no such node (current_node or a parent)")
        chain.append((node_id, node))
        node_id = node.get("parent")
    return chain


def _chatgpt_turn(msg: Any, nid: str, where: str, last: str | None) -> Turn | None:
    """One ChatGPT message as a turn (``last``: the time of the turn before, for one without its own)."""
    if not isinstance(msg, dict):
        return None
    role = (msg.get("author") or {}).get("role")
    if role not in ("user", "assistant") or (msg.get("metadata") or {}).get(
            "is_visually_hidden_from_conversation"):
        return None  # system and tool turns are the machinery, not the conversation
    text, files = _chatgpt_text(msg.get("content"))
    named = [attachment(str(a.get("name") or "attachment"), a.get("size"))
             for a in ((msg.get("metadata") or {}).get("attachments") or []) if isinstance(a, dict)]
    files = named or files  # an uploaded image is both a part and a named attachment
    if not text.strip() and not files:
        return None
    when = _time(msg.get("create_time"), f"{where}.mapping.{nid}.message.create_time") or last
    return Turn(str(msg.get("id") or nid), "ChatGPT" if role == "assistant" else "me", role, when, text, files)


def _chatgpt_thread(name: str, conv: Any, where: str) -> Thread:
    if not isinstance(conv, dict):
        raise ValueError(f"{where}: expected a conversation object")
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        raise ValueError(f"{where}.mapping: expected an object of message nodes")
    started = _time(conv.get("create_time"), f"{where}.create_time")
    key = conv.get("conversation_id") or conv.get("id") or hashlib.sha256(
        f"{conv.get('title')}\x1f{conv.get('create_time')}".encode()).hexdigest()[:32]
    chain = _chatgpt_chain(mapping, conv.get("current_node"), where)
    thread = Thread(str(key), str(conv.get("title") or "").strip() or "ChatGPT conversation", source=name)
    last = started
    for nid, node in reversed(chain):
        turn = _chatgpt_turn(node.get("message"), nid, where, last)
        if turn is not None:
            last = turn.sent_at
            thread.turns.append(turn)
    return thread


def parse_chatgpt(name: str, items: list[Any]) -> Parsed:
    return _each(name, items, _chatgpt_thread)
