"""The memory runner (the default agent): answers from the account's memory under the sender's
guards, in whole sentences naming the source; don't-know below the threshold; a greeting with the
brand's productName; and never a word that is not a stored sentence or one of its fixed lines."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plughost.plugins.channels.brand import GREETING
from plughost.plugins.channels.memory_runner import (
    DONT_KNOW,
    NOTED,
    PASSED_ON,
    WELCOME,
    MemoryRunner,
    contact_in,
    coverage,
    is_greeting,
    is_thanks,
    sentences,
    trim,
)
from plughost.plugins.channels.runner_choice import get_runner
from plughost.ports.graph import Guards
from plughost.ports.principal import Role
from plughost.runtime.tooltable import call_tool
from tests.convids import keyed_id
from tests.support.channels_support import agent_turn

HANDBOOK = {"attachmentId": "hb", "title": "Shop handbook", "content": (
    "# Shop handbook\n\n## Opening hours\n\nWe are open Monday to Friday from 9:00 to 17:00. "
    "On Saturdays we open at 10:00.\n\n## Delivery\n\nWe deliver flowers within the city for 5 euros.\n"),
    "scope": "public"}
SECRET = {"labels": ["Note"], "properties": {"name": "Staff opening hours code",
                                             "description": "The staff door code for opening hours is 4711.",
                                             "scope": "admin"}}


@pytest.fixture
def seeded(make_host, account):
    host = make_host(PLUGHOST_AGENT="memory")
    call_tool(host, "memory", "memory-ingest", HANDBOOK)
    call_tool(host, "memory", "memory-write", SECRET)
    return host


def ask(host, text: str, role: str = "public", session: str = "s") -> str:
    payload = {"text": text, "payload": f"## Context\n{text}", "role": role, "channel": "webchat", "sender": session}
    return asyncio.run(get_runner(host).run(session, agent_turn(payload, host.principal, session)))


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
    with pytest.raises(Exception, match=r"PLUGHOST_AGENT: expected one of memory, claude, command"):
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
    if reply in (DONT_KNOW, WELCOME, GREETING.format(product="plughost")) or reply.startswith("Thank you. I have passed"):
        return
    body, source = reply.rsplit("\n", 1)
    assert re.fullmatch(r"\(Source: .+\)", source)
    assert all(s in STORED for s in sentences(body)), reply


def test_a_contact_after_dont_know_passes_the_question_on_as_a_follow_up_task(seeded, capfd) -> None:
    assert ask(seeded, "Do you sell wedding cakes?", session="v1") == DONT_KNOW
    assert ask(seeded, "What is the capital of Peru?", session="v2") == DONT_KNOW
    assert ask(seeded, "jane@example.com", session="v1") == PASSED_ON.format(contact="jane@example.com")
    assert ask(seeded, "Thanks!", session="v1") == WELCOME
    tasks = seeded.store().find(guards=Guards(seeded.env["ACCOUNT_ID"]), labels=["Task"])
    (task,) = [node for node in tasks if node.properties.get("kind") == "follow-up"]
    props = task.properties
    assert "jane@example.com" in props["inputs"] and "wedding cakes" in props["inputs"]
    assert props["scope"] == "admin"  # a visitor's contact is never public memory
    assert "Peru" not in props["inputs"]  # the other visitor's question stays theirs
    # a contact with no question before it is passed on as a message; a question is not a contact
    assert ask(seeded, "call me on +44 20 7946 0958", session="v3") == NOTED.format(contact="+44 20 7946 0958")
    assert "op=follow-up outcome=passed-on" in capfd.readouterr().err


def test_contact_and_thanks_recognition() -> None:
    assert contact_in("you can reach me at jane.doe+cakes@example.co.uk, thanks") == "jane.doe+cakes@example.co.uk"
    assert contact_in("0207 946 0958") == "0207 946 0958"
    assert contact_in("Where is my order 12345678901 that I placed last week on Monday?") is None
    assert contact_in("What is INV-2024-0042?") is None
    assert is_thanks("thank you very much") and is_thanks("ok, bye") and is_thanks("Cheers!")
    assert not is_thanks("ok") and not is_thanks("thanks, but when do you open?")


def test_a_webchat_follow_up_is_linked_to_its_conversation(make_host, account, tmp_path) -> None:
    """Through the gateway: the Task names the visitor's Conversation and hangs off it (RAISED_DURING)."""
    import httpx
    from channels_support import ACCOUNT, serve, wait_for

    from plughost.plugins.channels.server import build_app

    host = make_host(PLUGHOST_AGENT="memory", ACCOUNT_ID=ACCOUNT)
    call_tool(host, "memory", "memory-ingest", HANDBOOK)
    with serve(build_app(host)) as base, httpx.Client(base_url=base, timeout=30) as client:
        first = client.post("/channels/webchat/messages", json={"text": "Do you sell wedding cakes?", "id": "m1"})
        session = first.json()["session"]

        def replies() -> list[str]:
            events = client.get("/channels/webchat/messages", params={"session": session}).json()["events"]
            return [e["text"] for e in events if e["role"] == "assistant"]

        assert wait_for(replies) == [DONT_KNOW]
        client.post("/channels/webchat/messages", json={"session": session, "text": "jane@example.com", "id": "m2"})
        assert wait_for(lambda: replies()[1:]) == [PASSED_ON.format(contact="jane@example.com")]
    store, admin = host.store(), Guards(ACCOUNT)
    (task,) = [t for t in store.find(guards=admin, labels=["Task"]) if t.properties.get("kind") == "follow-up"]
    (conversation,) = store.find(guards=admin, labels=["Conversation"])
    assert conversation.id == keyed_id(ACCOUNT, "webchat", session)
    assert task.properties["conversationId"] == conversation.id
    edges = store.expand([task.id], guards=admin, limit=20)[task.id]
    assert [(e.type, e.direction, e.node.id) for e in edges] == [("RAISED_DURING", "out", conversation.id)]


def test_searches_through_the_typed_call_in_this_host(seeded, monkeypatch) -> None:
    """A visitor's search is ``host.memory_search`` as the visitor's principal, in the serving host:
    no second Host is built and no tool text is parsed."""
    import inspect

    from plughost.plugins.channels import memory_runner
    from plughost.runtime.host import Host

    built: list[object] = []
    searched: list[tuple[str | None, tuple[str, ...] | None]] = []
    real_init, real_search = Host.__post_init__, Host.memory_search

    def counting_init(self) -> None:
        built.append(self)
        real_init(self)

    def recording_search(self, query, principal, limit=10):
        searched.append((principal.role, principal.scopes))
        return real_search(self, query, principal, limit)

    monkeypatch.setattr(Host, "__post_init__", counting_init)
    monkeypatch.setattr(Host, "memory_search", recording_search)
    assert ask(seeded, "When are you open?").startswith("We are open Monday to Friday")
    assert ask(seeded, "What is the staff door code?", role="admin").startswith("The staff door code")
    assert built == []
    assert searched[0] == (seeded.principal.visitor().role, seeded.principal.visitor().scopes)
    assert searched[1] == (Role.ADMIN_SESSION, seeded.principal.scopes)  # the admin turn's own principal
    source = inspect.getsource(memory_runner)
    assert "parse_results" not in source and "call_tool(" not in source.replace("host.call_tool(", "")
