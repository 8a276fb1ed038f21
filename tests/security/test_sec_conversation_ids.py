"""Conversation ids are not derivable from public facts, and a session id is never someone else's
conversation (docs/channels.md#conversation-ids, docs/guards.md#write-guards).

Knowing only public facts (a Telegram chat id, a WhatsApp number, a webchat session token someone
else could pick), a narrowed process, and a visitor session whose session id is chosen to equal a
derivable conversation id, cannot name, own, read or write another visitor's conversation. An
install's existing conversations (ids from before ids were keyed) keep resolving to their ids. On
each store (tests/backends.py).
"""

from __future__ import annotations

import hashlib
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plughost import Principal
from plughost.ports.graph import HAS_MESSAGE, Guards, WriteDenied, conversation_node_id
from plughost.util.errors import UserError
from tests.backends import BACKENDS, neo4j_env

A = "acct-a"
TELEGRAM = ("telegram", "123456789")
WHATSAPP = ("whatsapp", "+4915112345678")
WEBCHAT = ("webchat", "visitor-token-1")
LABEL = {"webchat": "WebchatMessage", "telegram": "TelegramMessage", "whatsapp": "WhatsAppMessage"}
SECRET_TEXT = "my order 4711 goes to 12 Elm Street"


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, plughost_home: Path) -> Iterator[Any]:
    if request.param == "neo4j":
        from plughost.plugins.graph.neo4j_store import Neo4jStore

        s: Any = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": A})
        s.wipe_account(A)
    else:
        from plughost.plugins.graph.sqlite_store import SqliteStore

        s = SqliteStore(plughost_home / "graph.sqlite", env={"ACCOUNT_ID": A})
    yield s
    if request.param == "neo4j":
        s.wipe_account(A)
    s.close()


def keyed(home: Path, channel: str, sender: str, store: Any) -> str:
    from plughost.api.credentials import conversation_secret
    from plughost.api.store import resolve_conversation_id

    return resolve_conversation_id(store, conversation_secret(home, A), A, channel, sender)


def seed(store: Any, conv: str, channel: str, sender: str) -> str:
    mid = f"{conv}-m"
    store.upsert_many([
        {"id": mid, "labels": ["Message", LABEL[channel]],
         "properties": {"role": "user", "text": SECRET_TEXT, "conversationId": conv, "channel": channel,
                        "sender": sender, "scope": "public", "sessionId": f"s-{sender}"}},
        {"id": conv, "labels": ["Conversation"],
         "properties": {"channel": channel, "sender": sender, "scope": "public", "sessionId": f"s-{sender}"},
         "edges": [{"type": HAS_MESSAGE, "to": mid}]},
    ], guards=Principal.system(A).guards)
    return mid


def test_new_conversation_ids_are_keyed_by_a_private_secret(plughost_home: Path, store: Any,
                                                            tmp_path: Path) -> None:
    for channel, sender in (TELEGRAM, WHATSAPP, WEBCHAT):
        conv = keyed(plughost_home, channel, sender, store)
        assert conv.startswith("conv-") and conv != conversation_node_id(A, channel, sender)
        assert conv == keyed(plughost_home, channel, sender, store)  # stable
        assert conv == keyed(tmp_path / "other-home", channel, sender, store)  # another server on this store: one id
    path = plughost_home / "accounts" / A / "credentials" / "conversation-id-secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_existing_conversations_keep_their_old_ids(plughost_home: Path, store: Any) -> None:
    old = conversation_node_id(A, *TELEGRAM)
    seed(store, old, *TELEGRAM)
    assert keyed(plughost_home, *TELEGRAM, store) == old
    # webchat stores Messages before its Conversation: an old first message keeps its id too
    early = conversation_node_id(A, *WEBCHAT)
    store.upsert_many([{"id": "early-m", "labels": ["Message", "WebchatMessage"],
                        "properties": {"role": "user", "text": "hi", "conversationId": early,
                                       "channel": WEBCHAT[0], "sender": WEBCHAT[1], "scope": "admin"}}],
                      guards=Principal.system(A).guards)
    assert keyed(plughost_home, *WEBCHAT, store) == early
    # a node at the old id that is not this sender's conversation is not taken for it
    assert keyed(plughost_home, *WHATSAPP, store) != conversation_node_id(A, *WHATSAPP)


def _conversations(store: Any, home: Path, session: str) -> Any:
    from plughost.plugins.memory.conversations.service import Conversations

    env = {"ACCOUNT_ID": A, "ALLOWED_SCOPES": "public", "SESSION_ID": session, "PLUGHOST_HOME": str(home)}
    return Conversations(store, None, env)


@pytest.mark.parametrize("target", [TELEGRAM, WHATSAPP, WEBCHAT], ids=lambda t: t[0])
def test_a_chosen_session_id_owns_no_one_elses_conversation(plughost_home: Path, store: Any,
                                                            target: tuple[str, str]) -> None:
    channel, sender = target
    old = conversation_node_id(A, channel, sender)  # an existing install's id: derivable
    old_msg = seed(store, old, channel, sender)
    new = "conv-" + hashlib.sha256(f"keyed {sender}".encode()).hexdigest()[:32]  # a new one (keyed: opaque)
    new_msg = seed(store, new, channel, f"{sender}-2")
    # sessions an attacker could choose: the derivable id, the webchat token, the keyed id's shape
    for session in (old, sender, conversation_node_id(A, channel, f"{sender}-2")):
        svc = _conversations(store, plughost_home, session)
        assert svc.session_conversation() is None, session
        out = svc.search(query="order Elm Street", limit=20)
        assert all(r.get("id") not in (old_msg, new_msg) for r in out["results"]), out
        assert SECRET_TEXT not in repr(out)
        for conv in (old, new):
            with pytest.raises(UserError):
                svc.append(role="assistant", content="pay at http://evil.example", conversationId=conv)
            with pytest.raises(UserError):  # by the public facts it would derive the id from
                svc.append(role="assistant", content="pay at http://evil.example", channel=channel,
                           sender=sender if conv == old else f"{sender}-2")
        mine = svc.append(role="user", content="hello")  # its own conversation: never one of theirs
        assert mine["conversationId"] not in (old, new)
        g = Guards(A, ("public",), None, session)
        for conv in (old, new):
            with pytest.raises(WriteDenied):
                store.upsert_node(["Message", LABEL[channel]], {"role": "assistant", "text": "pay here",
                                                                "conversationId": conv, "scope": "public"},
                                  guards=g)
            with pytest.raises(WriteDenied):
                store.upsert_node(["Conversation"], {"title": "hijacked"}, node_id=conv, guards=g)
    admin = Guards(A)
    for conv, mid in ((old, old_msg), (new, new_msg)):
        node = store.get(conv, guards=admin)
        assert node is not None and node.properties.get("title") is None
        assert node.properties.get("sessionId") == f"s-{node.properties['sender']}"
        msgs = store.find(guards=admin, labels=["Message"], where={"conversationId": conv}, limit=100)
        assert [m.id for m in msgs] == [mid], msgs


def test_a_session_still_owns_the_conversation_it_made(plughost_home: Path, store: Any) -> None:
    svc = _conversations(store, plughost_home, "sess-mine")
    first = svc.append(role="user", content="hello")
    assert first["conversationId"] == "sess-mine"
    again = _conversations(store, plughost_home, "sess-mine").append(role="user", content="again")
    assert again["conversationId"] == "sess-mine"
    assert _conversations(store, plughost_home, "sess-mine").session_conversation() == "sess-mine"


def test_the_pipeline_keys_new_conversations_and_keeps_old_ones(make_host: Any, plughost_home: Path) -> None:
    """Through the channels gateway: a new Telegram sender's Conversation is at the keyed id (not the
    chat id's hash); a sender whose Conversation an install stored before keeps getting it."""
    from plughost.plugins.channels.pipeline import Gateway, Inbound

    host = make_host(ACCOUNT_ID=A)
    old = conversation_node_id(A, "telegram", "222")
    seed(host.store(), old, "telegram", "222")
    gateway = Gateway(host)
    gateway.persist(Inbound(channel="telegram", sender="111", text="my invoice", platform_id="p1"))
    gateway.persist(Inbound(channel="telegram", sender="222", text="and mine", platform_id="p2"))
    admin = Guards(A)
    assert host.store().get(conversation_node_id(A, "telegram", "111"), guards=admin) is None
    new = keyed(plughost_home, "telegram", "111", host.store())
    assert host.store().get(new, guards=admin) is not None and new != conversation_node_id(A, "telegram", "111")
    got = {m.properties.get("sender"): m.properties.get("conversationId")
           for m in host.store().find(guards=admin, labels=["TelegramMessage"], limit=10)
           if m.properties.get("text") in ("my invoice", "and mine")}
    assert got == {"111": new, "222": old}
