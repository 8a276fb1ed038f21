"""The memory runner (the default agent): answers from the account's memory under the sender's
guards, in whole sentences naming the source; don't-know below the threshold; a greeting with the
brand's productName; and never a word that is not a stored sentence or one of its fixed lines."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host.tooltable import call_tool
from plugins.channels.brand import GREETING
from plugins.channels.memory_runner import DONT_KNOW, MemoryRunner, coverage, is_greeting, sentences, trim
from plugins.channels.runner import get_runner

HANDBOOK = {"attachmentId": "hb", "title": "Shop handbook", "content": (
    "# Shop handbook\n\n## Opening hours\n\nWe are open Monday to Friday from 9:00 to 17:00. "
    "On Saturdays we open at 10:00.\n\n## Delivery\n\nWe deliver flowers within the city for 5 euros.\n")}
SECRET = {"labels": ["Note"], "properties": {"name": "Staff opening hours code",
                                             "description": "The staff door code for opening hours is 4711.",
                                             "scope": "admin"}}


@pytest.fixture
def seeded(make_host, account):
    host = make_host(PLUGHOST_AGENT="memory")
    call_tool(host, "memory", "memory-ingest", HANDBOOK)
    call_tool(host, "memory", "memory-write", SECRET)
    return host


def ask(host, text: str, role: str = "public") -> str:
    return asyncio.run(get_runner(host).run("s", {"text": text, "payload": f"## Context\n{text}", "role": role}))


def test_answers_with_whole_sentences_and_names_the_source(seeded) -> None:
    reply = ask(seeded, "When are you open?")
    assert reply == ("We are open Monday to Friday from 9:00 to 17:00. On Saturdays we open at 10:00.\n"
                     "(Source: Shop handbook › Opening hours)")
    assert ask(seeded, "Do you deliver flowers?").startswith("We deliver flowers within the city for 5 euros.")
    assert ask(seeded, "What is the capital of Peru?") == DONT_KNOW
    assert ask(seeded, "Hello!") == GREETING.format(product="plughost")


def test_a_public_visitor_never_sees_admin_scope(seeded, capfd) -> None:
    public = ask(seeded, "What is the staff door code?")
    assert "4711" not in public and public == DONT_KNOW
    admin = ask(seeded, "What is the staff door code?", role="admin")
    assert "4711" in admin and "(Source: Staff opening hours code)" in admin
    assert "op=memory-answer outcome=dont-know" in capfd.readouterr().err


def test_threshold_is_configurable_and_checked(make_host, account) -> None:
    strict = make_host(PLUGHOST_AGENT="memory", PLUGHOST_AGENT_MIN_MATCH="1.01")
    call_tool(strict, "memory", "memory-ingest", HANDBOOK)
    assert ask(strict, "When are you open?") == DONT_KNOW
    broken = make_host(PLUGHOST_AGENT="memory", PLUGHOST_AGENT_MIN_MATCH="half")
    with pytest.raises(Exception, match="not-configured: PLUGHOST_AGENT_MIN_MATCH: expected a number"):
        ask(broken, "When are you open?")
    unknown = make_host(PLUGHOST_AGENT="gpt")
    with pytest.raises(Exception, match=r"PLUGHOST_AGENT: expected one of memory \| claude \| command"):
        ask(unknown, "hi")


def test_helpers() -> None:
    assert is_greeting("Hi there!") and is_greeting("good morning") and not is_greeting("good cake?")
    assert not is_greeting("hello, are you open on sunday?")
    assert coverage(["opening", "hours"], "Opening hours: we open at 9") == 1.0
    assert coverage(["capital", "peru"], "We are open at 9.") == 0.0
    long = " ".join(f"Sentence number {i} talks about nothing." for i in range(30)) + " Cakes are delivered daily."
    cut = trim(long, ["cakes", "delivered"], limit=120)
    assert "Cakes are delivered daily." in cut and len(cut) <= 120
    assert all(s in sentences(long) for s in sentences(cut))


STORED = sentences("We are open Monday to Friday from 9:00 to 17:00. On Saturdays we open at 10:00.") + \
    sentences("We deliver flowers within the city for 5 euros.")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=80) | st.sampled_from(["open hours?", "deliver?", "flowers city", "<b>hi</b>"]))
def test_never_invents_text(seeded, question: str) -> None:
    runner = get_runner(seeded)
    assert isinstance(runner, MemoryRunner)
    reply = ask(seeded, question)
    if reply in (DONT_KNOW, GREETING.format(product="plughost")):
        return
    body, source = reply.rsplit("\n", 1)
    assert re.fullmatch(r"\(Source: .+\)", source)
    assert all(s in STORED for s in sentences(body)), reply
