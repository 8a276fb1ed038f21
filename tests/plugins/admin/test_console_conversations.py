"""The console's Conversations list read from the store: a conversation stored as Messages alone
(a webchat visitor who wrote once, a one-message import) is listed like the others."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from plughost import Principal
from plughost.plugins.admin.console import pages

ACCOUNT = "acct0001-aaaa"


@pytest.fixture
def store(tmp_path: Path) -> Any:
    from plughost.plugins.graph.sqlite_store import SqliteStore

    s = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT})
    yield s
    s.close()


def _console(store: Any, tmp_path: Path) -> pages.Console:
    host = SimpleNamespace(principal=Principal.owner(ACCOUNT), store=lambda: store, home=tmp_path, env={})
    return pages.Console(host, login=None)  # type: ignore[arg-type]


def _message(mid: str, conv: str, text: str, at: str, role: str = "user", **extra: Any) -> dict[str, Any]:
    return {"id": mid, "labels": ["Message", "WebchatMessage"],
            "properties": {"role": role, "channel": "webchat", "sender": "visitor-abc123def456", "text": text,
                           "conversationId": conv, "receivedAt": at, "scope": "public", **extra}}


def _write(store: Any, rows: list[dict[str, Any]]) -> None:
    store.upsert_many(rows, guards=Principal.system(ACCOUNT).guards)


def _listed(console: pages.Console, page: int = 1, channel: str = "") -> list[dict[str, Any]]:
    rows, _ = console.conversation_rows(page, channel)
    return [c for person in rows for c in person["conversations"]]


def test_a_conversation_of_one_message_is_listed_with_its_question_contact_and_count(store, tmp_path) -> None:
    _write(store, [_message("msg-a1", "conv-two", "Are you open on Sundays?", "2026-03-01T10:00:00.000Z"),
                   _message("msg-a2", "conv-two", "ok", "2026-03-01T10:01:00.000Z"),
                   {"id": "conv-two", "labels": ["Conversation"],
                    "properties": {"channel": "webchat", "sender": "visitor-other", "scope": "public",
                                   "lastMessageAt": "2026-03-01T10:01:00.000Z"},
                    "edges": [{"type": "HAS_MESSAGE", "to": "msg-a1"}, {"type": "HAS_MESSAGE", "to": "msg-a2"}]}])
    _write(store, [_message("msg-b1", "conv-once", "Can you bake a cake for 80 guests?", "2026-03-02T09:00:00.000Z"),
                   {"id": "msg-imp", "labels": ["Message"],  # a one-message import: no ns stamp, no Conversation
                    "properties": {"role": "user", "text": "Do you deliver to the harbour?",
                                   "conversationId": "conv-imported", "sentAt": "2026-02-20T08:00:00Z",
                                   "scope": "public"}},
                   {"id": "lead-1", "labels": ["Task"],
                    "properties": {"kind": "follow-up", "conversationId": "conv-once", "title": "Follow up",
                                   "inputs": json.dumps({"contact": "ana@example.com", "channel": "webchat"}),
                                   "startedAt": "2026-03-02T09:00:01.000Z", "scope": "admin"}}])
    console = _console(store, tmp_path)
    listed = _listed(console)
    assert [c["id"] for c in listed] == ["conv-once", "conv-two", "conv-imported"]  # latest first
    once = listed[0]
    assert once["first"] == "Can you bake a cake for 80 guests?" and once["count"] == 1
    assert once["last"] == "2026-03-02 09:00" and once["channelName"] == "Webchat"
    rows, _ = console.conversation_rows(1)
    person = next(p for p in rows if p["conversations"][0]["id"] == "conv-once")
    assert person["who"] == once["contact"] == "ana@example.com"
    imported = listed[2]
    assert imported["first"] == "Do you deliver to the harbour?" and imported["count"] == 1
    assert [c["id"] for c in _listed(console, channel="webchat")] == ["conv-once", "conv-two"]


def test_message_only_conversations_page_with_the_others(store, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(pages, "PAGE_SIZE", 2)
    _write(store, [_message(f"msg-{i}", f"conv-{i}", f"question {i}", f"2026-03-0{i}T10:00:00.000Z")
                   for i in range(1, 6)])
    console = _console(store, tmp_path)
    seen = []
    for page in (1, 2, 3):
        seen += [c["id"] for c in _listed(console, page)]
    assert seen == ["conv-5", "conv-4", "conv-3", "conv-2", "conv-1"]
    assert console.conversation_rows(2)[1] is True and console.conversation_rows(3)[1] is False
