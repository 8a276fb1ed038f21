"""A Message's indexed form: the same from conversation-append, memory import and the reindex
(which fills in what the channels and the turn recorder write without it); results return the turn."""

from __future__ import annotations

import json

import pytest
from retrieval_support import ACCOUNT, LookupEmbedder

from plughost import Principal
from plughost.plugins.memory.bulk_import import import_jsonl
from plughost.plugins.memory.conversations.service import Conversations
from plughost.plugins.memory.embedding import indexed_form
from plughost.plugins.memory.embedding.reindex import reindex_contexts
from plughost.plugins.memory.embedding.text import embedding_text
from plughost.plugins.memory.retrieval import SearchFlags, SearchRequest, search
from plughost.ports.graph import Guards
from plughost.util.errors import UserError

G = Guards(ACCOUNT)
TURNS = [  # (sender, text, sentAt)
    ("Tom", "You're back from Lisbon! How was it?", "2025-03-04T10:00:00Z"),
    ("Maya", "Wonderful. We stayed four nights near the harbour.", "2025-03-04T10:01:00Z"),
    ("Tom", "haha nice", "2025-03-04T10:02:00Z"),
    ("Maya", "Next time you should come along.", "2025-03-04T10:03:00Z"),
]


class Recording(LookupEmbedder):
    """Records what it embeds; every text gets the same vector."""


def contexts_of(store):
    nodes = store.find(guards=G, labels=["Message"], limit=100)
    return {n.properties["text"]: n.properties.get("searchContext") for n in nodes}


def test_search_context_has_speaker_day_and_the_turns_before_under_a_budget():
    props = {"sender": "Maya", "text": "We stayed four nights.", "sentAt": "2025-03-04T10:01:00Z"}
    ctx = indexed_form.search_context(props, [{"sender": "Tom", "text": "How was Lisbon?"}], 2)
    assert ctx == "Maya, 4 March 2025\nTom: How was Lisbon?"
    long = [{"sender": "Tom", "text": "word " * 400}] * 5
    ctx = indexed_form.search_context(props, long, 5)
    assert len(ctx) <= indexed_form.CONTEXT_CHARS and ctx.count("\n") == 2  # each turn cut, the total capped
    assert indexed_form.search_context(props, long, 0) is None
    with_ctx = {**props, "searchContext": "Maya, 4 March 2025"}
    assert embedding_text(["Message"], with_ctx) == "We stayed four nights."  # default: the bare turn
    assert indexed_form.embedding_text(with_ctx, {"PLUGHOST_MESSAGE_EMBED": "context"}) == \
        "We stayed four nights.\nMaya, 4 March 2025"
    with pytest.raises(UserError, match="PLUGHOST_MESSAGE_EMBED"):
        indexed_form.embedding_text(with_ctx, {"PLUGHOST_MESSAGE_EMBED": "both"})


@pytest.fixture
def appended(store, monkeypatch):
    monkeypatch.setenv("PLUGHOST_MESSAGE_CONTEXT_TURNS", "2")
    monkeypatch.setenv("PLUGHOST_MESSAGE_EMBED", "context")
    emb = Recording({})
    svc = Conversations(store, emb, {"ACCOUNT_ID": ACCOUNT})
    for sender, text, at in TURNS:
        svc.append(role="user", content=text, conversationId="conv-1", sender=sender, timestamp=at)
    return store, emb


def test_append_import_and_reindex_give_the_same_indexed_form(appended, tmp_path, monkeypatch):
    store, emb = appended
    by_append = contexts_of(store)
    assert by_append["Wonderful. We stayed four nights near the harbour."] == \
        "Maya, 4 March 2025\nTom: You're back from Lisbon! How was it?"
    assert by_append["Next time you should come along."].count("\n") == 2
    # what was embedded is the turn, then its context
    assert any(t.startswith("Wonderful.") and "Lisbon" in t for call in emb.calls for t in call)

    from plughost.plugins.graph.sqlite_store import SqliteStore

    other = SqliteStore(tmp_path / "imported.sqlite", env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": "4"})
    try:
        path = tmp_path / "turns.jsonl"
        lines = [{"id": f"m{i}", "labels": ["Message"], "properties": {
            "role": "user", "sender": s, "text": t, "sentAt": at, "conversationId": "conv-1"}}
            for i, (s, t, at) in reversed(list(enumerate(TURNS)))]  # file order does not matter
        path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        summary = import_jsonl(other, LookupEmbedder({}), path, guards=Principal.owner(ACCOUNT).guards, progress=False)
        assert summary.embedded == len(TURNS)
        assert contexts_of(other) == by_append
        assert all(other.get_embedding(f"m{i}", guards=G) for i in range(len(TURNS)))

        # the channels / turn recorder write bare turns; reindex --context gives them the same form
        for i, (_, t, _) in enumerate(TURNS):
            other.upsert_node(["Message"], {"searchContext": None, "text": t},
                              guards=Principal.system(ACCOUNT).guards, node_id=f"m{i}")
        assert set(contexts_of(other).values()) == {None}
        assert reindex_contexts(other, None, account_id=ACCOUNT, turns=2) == len(TURNS)
        assert contexts_of(other) == by_append
        assert reindex_contexts(other, None, account_id=ACCOUNT, turns=2) == 0  # nothing left to change
        assert reindex_contexts(other, None, account_id=ACCOUNT, turns=0) == len(TURNS)  # off: removed
        assert set(contexts_of(other).values()) == {None}
    finally:
        other.close()


def test_context_makes_the_turn_findable_and_results_show_the_turn(appended):
    store, _ = appended
    out = search(store, SearchRequest("how many nights in Lisbon for Maya", limit=2, expand_hops=0), guards=G,
                 flags=SearchFlags.baseline(stem=True, stopwords=True), emit_log=False)
    assert out.rows[0].props["text"].startswith("Wonderful.")
    assert "searchContext" not in out.text and "searchContext" not in out.as_json()["results"][0]["properties"]


def test_memory_import_then_reindex_context_cli(cli, plughost_home, tmp_path):
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps({"id": f"m{i}", "labels": ["Message"], "properties": {
        "role": "user", "sender": s, "text": t, "sentAt": at, "conversationId": "conv-1"}}) + "\n"
        for i, (s, t, at) in enumerate(TURNS)))
    env = {"ACCOUNT_ID": ACCOUNT, "EMBED_DIMENSIONS": "4", "PLUGHOST_MESSAGE_CONTEXT_TURNS": "0"}
    done = cli("memory", "import", str(path), "--no-embed", env=env)
    assert done.returncode == 0, done.stderr
    again = cli("memory", "reindex", "--context", env={**env, "PLUGHOST_MESSAGE_CONTEXT_TURNS": "1"})
    assert again.returncode == 0 and "reindex: context changed=4" in again.stdout, again.stderr
    assert "[reindex] op=context conversations=1 changed=4 turns=1" in again.stderr
    bad = cli("memory", "reindex", "--context", env={**env, "PLUGHOST_MESSAGE_CONTEXT_TURNS": "many"})
    assert bad.returncode == 2 and "PLUGHOST_MESSAGE_CONTEXT_TURNS" in bad.stderr and "Traceback" not in bad.stderr
    from plughost.plugins.graph.sqlite_store import SqliteStore

    store = SqliteStore(plughost_home / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT})
    try:
        assert contexts_of(store)["Wonderful. We stayed four nights near the harbour."] == \
            "Maya, 4 March 2025\nTom: You're back from Lisbon! How was it?"
    finally:
        store.close()


def test_reindex_gives_bare_channel_turns_their_indexed_form(store, monkeypatch):
    from plughost.plugins.memory.embedding.reindex import reindex

    monkeypatch.setenv("PLUGHOST_MESSAGE_CONTEXT_TURNS", "1")
    for i, (s, t, at) in enumerate(TURNS):  # as the channels and the turn recorder write them: no vector
        store.upsert_node(["Message", "TelegramMessage"], {"role": "user", "sender": s, "text": t, "sentAt": at,
                                                           "conversationId": "tg-1"}, guards=Principal.system(ACCOUNT).guards,
                          node_id=f"t{i}")
    emb = Recording({})
    summary = reindex(store, emb, account_id=ACCOUNT)
    assert summary.processed == len(TURNS) and store.missing_embeddings(account_id=ACCOUNT) == []
    assert contexts_of(store)["Wonderful. We stayed four nights near the harbour."] == \
        "Maya, 4 March 2025\nTom: You're back from Lisbon! How was it?"
    assert "Wonderful. We stayed four nights near the harbour." in [t for call in emb.calls for t in call]
    monkeypatch.setenv("PLUGHOST_MESSAGE_EMBED", "context")  # the other form: the turn, then its context
    store.upsert_node(["Message"], {"searchContext": None},
                      guards=Principal.system(ACCOUNT).guards, node_id="t1")
    assert reindex_contexts(store, emb, account_id=ACCOUNT, turns=1) == 1
    assert "Wonderful. We stayed four nights near the harbour.\nMaya, 4 March 2025\nTom: You're back from " \
           "Lisbon! How was it?" in [t for call in emb.calls for t in call]
