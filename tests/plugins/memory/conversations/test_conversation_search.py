"""Conversation search (docs/memory.md#conversations): a session sees only its own conversation, admin its account's."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from conversation_support import HashEmbedder, open_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plughost import Principal
from plughost.plugins.memory.conversations.service import Conversations
from plughost.ports.graph import CHANNEL_MESSAGE_LABELS, HAS_MESSAGE, Guards, conversation_node_id
from tests.convids import keyed_id

ACCOUNTS = ("acct-one", "acct-two")
WORDS = ("invoice", "delivery", "refund", "pizza", "schedule", "garden")


def store_like_channels(store: Any, account: str, channel: str, sender: str, texts: list[tuple[str, str]],
                        session: str) -> str:
    """Write a conversation exactly in the channels pipeline's stored shape (host/ports/graph.py)."""
    conv = conversation_node_id(account, channel, sender)
    rows = []
    for i, (role, text) in enumerate(texts):
        rows.append({"id": f"msg-{conv}-{i}", "labels": ["Message", CHANNEL_MESSAGE_LABELS[channel]],
                     "properties": {"role": role, "channel": channel, "sender": sender, "text": text,
                                    "conversationId": conv, "sentAt": f"2026-01-01T00:00:{i:02d}Z",
                                    "scope": "admin", "sessionId": session}})
    rows.append({"id": conv, "labels": ["Conversation"],
                 "properties": {"channel": channel, "sender": sender, "sessionId": session, "scope": "admin"},
                 "edges": [{"type": HAS_MESSAGE, "to": r["id"]} for r in rows]})
    store.upsert_many(rows, guards=Principal.system(account).guards)
    return conv


conversation = st.tuples(
    st.sampled_from(ACCOUNTS),
    st.sampled_from(sorted(CHANNEL_MESSAGE_LABELS)),
    st.lists(st.tuples(st.sampled_from(("user", "assistant")),
                       st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)),
             min_size=1, max_size=6),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(convs=st.lists(conversation, min_size=2, max_size=12), word=st.sampled_from(WORDS),
       embed=st.booleans())
def test_session_never_sees_another_conversation_nor_account(convs, word, embed) -> None:
    embedder = HashEmbedder() if embed else None
    with tempfile.TemporaryDirectory() as tmp:
        stores = {a: open_store(Path(tmp) / "graph.sqlite", a) for a in ACCOUNTS}
        try:
            written: dict[str, tuple[str, list[str]]] = {}  # conversation id -> (account, texts)
            for i, (account, channel, texts) in enumerate(convs):
                session = f"session-{i}"
                store = stores[account]
                conv = store_like_channels(store, account, channel, f"sender-{i}", texts, session)
                written.setdefault(conv, (account, []))[1].extend(t for _, t in texts)
                if embedder is not None:
                    msgs = store.find(guards=Guards(account), labels=["Message"], where={"conversationId": conv})
                    store.set_embeddings([(m.id, embedder.embed([m.properties["text"]])[0]) for m in msgs],
                                         account_id=account)
            for i, (account, channel, _texts) in enumerate(convs):
                env = {"ACCOUNT_ID": account, "SESSION_ID": f"session-{i}"}
                own = conversation_node_id(account, channel, f"sender-{i}")
                found = Conversations(stores[account], embedder, env).search(query=word, limit=50)["results"]
                assert all(r["conversationId"] == own for r in found), (own, found)
                # a sender writing twice (same deterministic conversation) merges into one conversation
                expected = [t for t in written[own][1] if word in t.split()]
                if embedder is None:
                    assert len(found) == len(expected)
                else:  # the vector path may add non-matching messages, but only of this conversation
                    assert len(found) >= len(expected)
            for account in ACCOUNTS:
                reader = stores[ACCOUNTS[0]]  # reads are guarded by the env's account, whichever process opened the file
                found = Conversations(reader, embedder, {"ACCOUNT_ID": account}).search(query=word, limit=50)["results"]
                mine = {c for c, (a, _) in written.items() if a == account}
                assert {r["conversationId"] for r in found} <= mine
                expected = sum(1 for c in mine for t in written[c][1] if word in t.split())
                if embedder is None:
                    assert len(found) == min(expected, 50)
        finally:
            for s in stores.values():
                s.close()


def test_filter_applies_before_the_top_k_cut(store) -> None:
    """Many better-ranked messages elsewhere never crowd the session's own message out of top-k."""
    for i in range(200):
        store_like_channels(store, "acct-one", "telegram", f"noisy-{i}", [("user", "refund refund refund")],
                            f"noisy-{i}")
    own = store_like_channels(store, "acct-one", "webchat", "visitor", [("user", "about my refund please")], "mine")
    found = Conversations(store, None, {"ACCOUNT_ID": "acct-one", "SESSION_ID": "mine"}).search(query="refund",
                                                                                               limit=1)
    assert [r["conversationId"] for r in found["results"]] == [own]
    assert found["results"][0]["content"] == "about my refund please"


def test_a_message_deleted_between_the_search_and_its_reading_is_left_out(store, monkeypatch) -> None:
    """The store may read a hit's properties after the search (docs/graph.md): a Message deleted in
    between is withdrawn, and conversation-search leaves it out rather than show an empty row."""
    conv = store_like_channels(store, "acct-one", "webchat", "visitor",
                               [("user", "refund for order one"), ("user", "refund for order two")], "s1")
    searched = store.fulltext_search

    def then_deleted(*args: Any, **kwargs: Any) -> Any:
        hits = searched(*args, **kwargs)
        store.soft_delete(f"msg-{conv}-0", guards=Guards("acct-one"))
        return hits

    monkeypatch.setattr(store, "fulltext_search", then_deleted)
    found = Conversations(store, None, {"ACCOUNT_ID": "acct-one"}).search(query="refund", limit=5)["results"]
    assert [r["content"] for r in found] in (["refund for order two"], ["refund for order one", "refund for order two"])
    assert all(r["content"] and r["conversationId"] == conv for r in found)


def call(host: Any, tool: str, args: dict) -> tuple[bool, Any]:
    from mcp import Client

    from plughost.mcp.server import build_server

    async def go() -> tuple[bool, Any]:
        async with Client(build_server(host, "memory")) as client:
            result = await client.call_tool(tool, args)
            text = "".join(getattr(c, "text", "") for c in result.content)
            return bool(result.is_error), (text if result.is_error else json.loads(text))

    return anyio.run(go)


def test_append_then_search_through_mcp(make_host, plughost_home) -> None:
    admin = make_host(ACCOUNT_ID="acct-one")
    err, a = call(admin, "conversation-append", {"channel": "webchat", "sender": "ann", "role": "user",
                                                 "content": "Where is my parcel delivery?",
                                                 "timestamp": "2026-02-01T10:00:00Z"})
    assert not err, a
    assert a["conversationId"] == keyed_id("acct-one", "webchat", "ann") and a["created"] is True
    err, b = call(admin, "conversation-append", {"conversationId": a["conversationId"], "role": "assistant",
                                                 "content": "Your delivery arrives tomorrow."})
    assert not err and b["created"] is False
    err, _ = call(admin, "conversation-append", {"channel": "webchat", "sender": "bob", "role": "user",
                                                 "content": "Delivery of pizza to the office"})
    assert not err
    g = Guards("acct-one")
    conv = admin.store().get(a["conversationId"], guards=g)
    assert conv is not None and "Conversation" in conv.labels
    edges = admin.store().expand([conv.id], guards=g)[conv.id]
    assert sorted(n.type for n in edges) == [HAS_MESSAGE, HAS_MESSAGE]
    assert all("WebchatMessage" in n.node.labels for n in edges)

    err, found = call(admin, "conversation-search", {"query": "delivery"})
    assert not err and len(found["results"]) == 3 and found["restricted"] is False
    first = found["results"][0]
    assert set(first) >= {"role", "content", "timestamp", "score", "conversationId"}
    err, found = call(admin, "conversation-search", {"query": "delivery", "conversationId": a["conversationId"],
                                                     "role": "user"})
    assert not err and [r["content"] for r in found["results"]] == ["Where is my parcel delivery?"]
    assert found["results"][0]["timestamp"] == "2026-02-01T10:00:00Z"

    # a session (public agent) resolves its conversation by sessionId and sees nothing else
    admin.store().upsert_node(["Conversation"], {"sessionId": "sess-ann"},
                              guards=Principal.system("acct-one").guards,
                              node_id=a["conversationId"])
    session_host = make_host(ACCOUNT_ID="acct-one", SESSION_ID="sess-ann")
    err, found = call(session_host, "conversation-search", {"query": "delivery pizza"})
    assert not err and found["restricted"] is True
    assert {r["conversationId"] for r in found["results"]} == {a["conversationId"]}
    err, text = call(session_host, "conversation-search", {"query": "pizza",
                                                           "conversationId": conversation_node_id("acct-one",
                                                                                                  "webchat", "bob")})
    assert err and text.startswith("conversationId: not this session's conversation")
    err, text = call(session_host, "conversation-append", {"conversationId": "conv-else", "role": "user",
                                                           "content": "x"})
    assert err and "not this session's conversation" in text
    log = (plughost_home / "logs" / "server.log").read_text(encoding="utf-8")
    assert "[conversations] op=search account=acct-one" in log and "restricted=1" in log


def test_other_account_and_bad_input(make_host) -> None:
    one = make_host(ACCOUNT_ID="acct-one")
    two = make_host(ACCOUNT_ID="acct-two")
    assert not call(one, "conversation-append", {"conversationId": "c1", "role": "user", "content": "garden"})[0]
    err, found = call(two, "conversation-search", {"query": "garden"})
    assert not err and found["results"] == []
    err, text = call(one, "conversation-append", {"role": "user", "content": "no conversation"})
    assert err and text.startswith("conversationId: expected")
    err, text = call(one, "conversation-append", {"conversationId": "c1", "role": "user", "content": "x",
                                                  "timestamp": "yesterday"})
    assert err and text.startswith("timestamp: expected an ISO 8601 time") and "'yesterday'" in text
    err, text = call(one, "conversation-append", {"conversationId": "c2", "role": "user", "content": "x",
                                                  "messageId": c1_message(one)})
    assert err and text.startswith("messageId: ") and "outside this conversation" in text
    assert one.store().count(guards=Guards("acct-one"), labels=["Message"]) == 1


def test_append_limits_are_the_schemas(make_host) -> None:
    """PLUGIN.md's inputSchema holds conversation-append's limits and the host checks them before
    the handler runs (one line naming the parameter); the handler keeps what a schema cannot say."""
    one = make_host(ACCOUNT_ID="acct-one")
    err, text = call(one, "conversation-append", {"conversationId": "c1", "role": "user", "content": "x" * 20_001})
    assert err and text.startswith("conversation-append: parameter 'content': expected maxLength 20000"), text
    assert "\n" not in text
    err, text = call(one, "conversation-append", {"conversationId": "c1", "role": "owner", "content": "x"})
    assert err and text.startswith("conversation-append: parameter 'role': expected one of user, assistant, "
                                   "system, tool"), text
    err, text = call(one, "conversation-append", {"conversationId": "c1", "role": "user", "content": ""})
    assert err and text.startswith("conversation-append: parameter 'content': expected minLength 1"), text
    err, text = call(one, "conversation-append", {"conversationId": "c1", "role": "user", "content": "  \n "})
    assert err and text == "content: expected a non-empty string"
    assert not call(one, "conversation-append", {"conversationId": "c1", "role": "user", "content": "x" * 20_000})[0]
    assert one.store().count(guards=Guards("acct-one"), labels=["Message"]) == 1


def c1_message(host: Any) -> str:
    return host.store().find(guards=Guards("acct-one"), labels=["Message"], where={"conversationId": "c1"})[0].id


def test_session_without_conversation_appends_to_its_own(make_host) -> None:
    host = make_host(ACCOUNT_ID="acct-one", SESSION_ID="sess-new")
    err, a = call(host, "conversation-append", {"role": "user", "content": "first schedule question"})
    assert not err and a["conversationId"] == "sess-new"
    err, found = call(host, "conversation-search", {"query": "schedule"})
    assert not err and [r["conversationId"] for r in found["results"]] == ["sess-new"]


def test_channels_pipeline_messages_are_searchable(make_host) -> None:
    """End to end: the channels gateway persists inbound messages; the session's agent finds its own."""
    from plughost.plugins.channels.pipeline import Gateway, Inbound
    from plughost.plugins.channels.runner import session_id_for

    host = make_host(ACCOUNT_ID="acct-one")
    gateway = Gateway(host)
    gateway.persist(Inbound(channel="telegram", sender="111", text="my invoice is wrong", platform_id="p1"))
    gateway.persist(Inbound(channel="telegram", sender="222", text="invoice for the garden", platform_id="p2"))
    assert host.store().get(keyed_id("acct-one", "telegram", "111"), guards=Guards("acct-one")) is not None
    agent = make_host(ACCOUNT_ID="acct-one", SESSION_ID=session_id_for("acct-one", "telegram:111"))
    err, found = call(agent, "conversation-search", {"query": "invoice"})
    assert not err, found
    assert [r["content"] for r in found["results"]] == ["my invoice is wrong"]
    assert found["results"][0]["role"] == "user"
    err, found = call(host, "conversation-search", {"query": "invoice"})
    assert not err and len(found["results"]) == 2


def test_store_filters_where_and_within_before_the_cut(store) -> None:
    """The port's optional filters, on both search paths of the SQLite store."""
    embedder = HashEmbedder()
    a = store_like_channels(store, "acct-one", "whatsapp", "a", [("user", "garden hose"), ("user", "garden")], "sa")
    store_like_channels(store, "acct-one", "whatsapp", "b", [("user", "garden garden garden")] * 3, "sb")
    msgs = store.find(guards=Guards("acct-one"), labels=["Message"])
    store.set_embeddings([(m.id, embedder.embed([m.properties["text"]])[0]) for m in msgs], account_id="acct-one")
    g = Guards("acct-one")
    for kwargs in ({"where": {"conversationId": a}}, {"within": (a, HAS_MESSAGE)}):
        assert {h.node.properties["conversationId"] for h in store.fulltext_search("garden", 1, guards=g, **kwargs)} \
            == {a}
        hits = store.vector_search(embedder.embed(["garden garden garden"])[0], 1, guards=g, **kwargs)
        assert len(hits) == 1 and hits[0].node.properties["conversationId"] == a
    assert store.fulltext_search("garden", 5, guards=g, within=("no-such-node", HAS_MESSAGE)) == []
    assert len(store.fulltext_search("garden", 5, guards=g)) == 5


def test_backend_without_filters_refuses_instead_of_leaking(store) -> None:
    """A store that cannot apply ``where`` / ``within`` (Neo4j today) refuses them: a session gets a clear error."""
    import pytest

    from plughost.util.errors import UserError

    def _no_filters(where: Any, within: Any) -> None:
        if where or within:
            raise UserError("search: the old store cannot filter by conversation inside its queries")

    class OldStore:
        backend = "old"

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def get(self, *a: Any, **k: Any) -> Any:
            return self.inner.get(*a, **k)

        def find(self, *a: Any, **k: Any) -> Any:
            return self.inner.find(*a, **k)

        def fulltext_search(self, query: str, k: int, *, guards: Guards, labels: Any = None, **filters: Any) -> Any:
            _no_filters(filters.get("where"), filters.get("within"))
            return self.inner.fulltext_search(query, k, guards=guards, labels=labels)

        def vector_search(self, vector: Any, k: int, *, guards: Guards, labels: Any = None, **filters: Any) -> Any:
            _no_filters(filters.get("where"), filters.get("within"))
            return self.inner.vector_search(vector, k, guards=guards, labels=labels)

    store_like_channels(store, "acct-one", "telegram", "x", [("user", "pizza")], "sx")
    old = OldStore(store)
    assert len(Conversations(old, None, {"ACCOUNT_ID": "acct-one"}).search(query="pizza")["results"]) == 1
    with pytest.raises(UserError, match="cannot filter by conversation"):
        Conversations(old, None, {"ACCOUNT_ID": "acct-one", "SESSION_ID": "sx"}).search(query="pizza")


def test_which_processes_are_confined() -> None:
    from plughost.plugins.memory.conversations.service import session_of

    assert session_of({"SESSION_ID": "s1"}) == "s1"
    assert session_of({"SESSION_ID": "s1", "PLUGHOST_SESSION_ROLE": "admin"}) == "s1"
    assert session_of({"PLUGHOST_SESSION_ID": "r1", "PLUGHOST_SESSION_ROLE": "public"}) == "r1"
    assert session_of({"PLUGHOST_SESSION_ID": "r1"}) == "r1"
    assert session_of({"PLUGHOST_SESSION_ID": "r1", "PLUGHOST_SESSION_ROLE": "admin"}) is None
    assert session_of({}) is None
