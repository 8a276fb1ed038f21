"""NEIGHBOURS: a turn inherits part of the score of the candidate turns in its context window."""

from __future__ import annotations

from retrieval_support import row

from plughost.plugins.memory.embedding import indexed_form
from plughost.plugins.memory.retrieval import neighbours
from plughost.plugins.memory.retrieval.flags import SearchFlags

TOPIC = {"sender": "Tom", "text": "You're back from Lisbon! How was it?", "sentAt": "2025-03-04T10:00:00Z",
         "conversationId": "c1"}
ANSWER = {"sender": "Maya", "text": "Wonderful. We stayed four nights.", "sentAt": "2025-03-04T10:01:00Z",
          "conversationId": "c1"}


def turn(node_id, score, props, previous=()):
    props = indexed_form.with_context(props, list(previous), 1)
    return row(node_id, score, "Message", **props)


def test_the_answer_after_the_topic_turn_inherits_its_share():
    topic, answer = turn("t", 0.8, TOPIC), turn("a", 0.2, ANSWER, [TOPIC])
    other = turn("o", 0.5, {**ANSWER, "text": "Rainy all week.", "conversationId": "c2"}, [])
    assert neighbours.propagate([topic, answer, other], 0.5) == 1
    assert answer.score == 0.2 + 0.5 * 0.8 and topic.score == 0.8 and other.score == 0.5


def test_back_share_and_off():
    topic, answer = turn("t", 0.8, TOPIC), turn("a", 0.2, ANSWER, [TOPIC])
    assert neighbours.propagate([topic, answer], 0.0, 0.25) == 1
    assert topic.score == 0.8 + 0.25 * 0.2 and answer.score == 0.2  # shares come from the scores before
    assert neighbours.propagate([topic, answer], 0.0, 0.0) == 0


def test_only_the_same_conversation_and_only_candidates_take_part():
    # the same words in another conversation are not a neighbour; a turn outside the pool adds nothing
    stranger = turn("s", 0.9, {**TOPIC, "conversationId": "c2"})
    answer = turn("a", 0.2, ANSWER, [TOPIC])
    assert neighbours.propagate([stranger, answer], 0.5) == 0 and answer.score == 0.2
    # rows that are not Messages (a man page, a note) never move
    doc = row("d", 0.7, "KnowledgeDocument", content="Tom: You're back from Lisbon! How was it?")
    assert neighbours.propagate([doc, answer], 0.5) == 0


def test_baseline_flags_keep_the_stage_off():
    assert SearchFlags.baseline().neighbours == 0.0 and SearchFlags.baseline().neighbours_back == 0.0
    assert SearchFlags.from_env({"PLUGHOST_GS_NEIGHBOURS": "0"}).neighbours == 0.0


def test_the_pipeline_runs_the_stage_on_appended_turns(store, monkeypatch):
    from retrieval_support import ACCOUNT, LookupEmbedder

    from plughost.plugins.memory.conversations.service import Conversations
    from plughost.plugins.memory.retrieval import SearchRequest, search
    from plughost.ports.graph import Guards

    monkeypatch.setenv("PLUGHOST_MESSAGE_CONTEXT_TURNS", "1")
    svc = Conversations(store, LookupEmbedder({}), {"ACCOUNT_ID": ACCOUNT})
    for props in (TOPIC, ANSWER):
        svc.append(role="user", content=props["text"], conversationId="c1", sender=props["sender"],
                   timestamp=props["sentAt"])
    req = SearchRequest("Lisbon", limit=5, expand_hops=0)
    flags = SearchFlags.baseline(stem=True, stopwords=True)
    off = search(store, req, guards=Guards(ACCOUNT), flags=flags, emit_log=False)
    on = search(store, req, guards=Guards(ACCOUNT), flags=SearchFlags.baseline(stem=True, stopwords=True, neighbours=0.5),
                emit_log=False)
    score = {r.props["text"]: r.score for r in off.rows}
    score_on = {r.props["text"]: r.score for r in on.rows}
    assert off.stats["neighbours"] == 0 and on.stats["neighbours"] == 1
    assert score_on[ANSWER["text"]] == score[ANSWER["text"]] + 0.5 * score[TOPIC["text"]]
