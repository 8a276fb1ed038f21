"""SESSION, SPEAKERS and the Message weight: pool-only stages for conversation turns."""

from __future__ import annotations

from retrieval_support import row

from plughost.plugins.memory.retrieval import composite, session, speakers
from plughost.plugins.memory.retrieval.flags import SearchFlags


def turn(node_id, score, conversation="c1", sender="Maya"):
    return row(node_id, score, "Message", text="...", conversationId=conversation, senderName=sender)


def test_session_share_is_the_mean_of_the_best_three_turns():
    a, b, c, d = turn("a", 0.9), turn("b", 0.6), turn("c", 0.3), turn("d", 0.1)
    lone = turn("e", 0.9, conversation="c2")
    doc = row("k", 0.5, "KnowledgeDocument", content="x")
    assert session.session_scores([a, b, c, d, lone]) == {"c1": (0.9 + 0.6 + 0.3) / 3, "c2": 0.9 / 3}
    assert session.propagate([a, b, c, d, lone, doc], 0.5) == 5
    assert d.score == 0.1 + 0.5 * 0.6 and lone.score == 0.9 + 0.5 * 0.3 and doc.score == 0.5
    assert session.propagate([a], 0.0) == 0


def test_speaker_bump_names_and_near_spellings():
    maya, tom, akib = turn("m", 0.5), turn("t", 0.5, sender="Tom"), turn("k", 0.5, sender="Akib")
    assert speakers.bump([maya, tom, akib], "What did Maya's sister cook? And Akim?", 1.0) == 2
    assert maya.score == 1.0 and akib.score == 1.0 and tom.score == 0.5
    assert speakers.bump([tom], "what did she cook", 1.0) == 0  # no capitalised name
    assert not speakers.matches("kevin", {"kate"}) and speakers.matches("elise", {"elise"})
    doc = row("d", 0.5, "KnowledgeDocument", senderName="Maya")
    assert speakers.bump([doc], "Maya", 1.0) == 0


def test_message_weight_scales_turns_only():
    t, doc = turn("t", 0.8), row("d", 0.5, "Chunk", content="x")
    assert composite.message_weight([t, doc], 0.5) == 1 and t.score == 0.4 and doc.score == 0.5
    assert composite.message_weight([t, doc], 1.0) == 0


def test_baseline_keeps_the_stages_off():
    base = SearchFlags.baseline()
    assert (base.session, base.speaker, base.message_weight) == (0.0, 0.0, 1.0)
    assert SearchFlags.from_env({"PLUGHOST_GS_SPEAKER": "0", "PLUGHOST_GS_SESSION": "0",
                                 "PLUGHOST_GS_MESSAGE_WEIGHT": "1"}).speaker == 0.0


def test_dates_named_days_and_the_bump():
    from plughost.plugins.memory.retrieval import dates

    assert dates.named_days("What did Kate make on 29 Dec 2023?") == [(2023, 12, 29)]
    assert dates.named_days("Where was she on December 31st, 2023 and 16.01.2024?") == [(2023, 12, 31), (2024, 1, 16)]
    assert dates.named_days("Did she go before January 1st, 2024?") == []  # a bound, not a day
    on = row("a", 0.5, "Message", text="pasta", sentAt="2023-12-29T20:00:00Z")
    after = row("b", 0.5, "Message", text="yesterday", sentAt="2023-12-30T09:00:00Z")
    later = row("c", 0.5, "Message", text="x", sentAt="2024-01-02T09:00:00Z")
    assert dates.bump([on, after, later], "What did Kate make on 29 Dec?", 1.0) == 2  # no year: the pool's
    assert (on.score, after.score, later.score) == (1.0, 1.0, 0.5)
    assert dates.bump([later], "no day here", 1.0) == 0
