"""What the memory runner promises a visitor and the owner: a contact is asked for once and every
later unanswered question joins that visitor's lead; a returning visitor is known (name, contact);
the business's own facts (address, phone) come from its entity and documents; a passage that
matches one incidental word of the question is not an answer."""

from __future__ import annotations

import asyncio

import pytest

from plughost.cli.commands.demo import DOCUMENTS, ENTITIES
from plughost.plugins.channels.memory_runner import DONT_KNOW, PASSED_ON, MemoryRunner
from plughost.plugins.channels.runner_choice import get_runner
from plughost.ports.graph import Guards
from plughost.runtime.tooltable import call_tool
from tests.support.channels_support import agent_turn


@pytest.fixture
def bakery(make_host, account):
    host = make_host(PLUGHOST_AGENT="memory", PLUGHOST_EMBEDDER="none")
    for doc in DOCUMENTS:
        call_tool(host, "memory", "memory-ingest", doc)
    for entity in ENTITIES:
        call_tool(host, "memory", "memory-write", entity)
    return host


def ask(host, text: str, session: str = "s", **extra) -> str:
    payload = {"text": text, "payload": f"## Context\n{text}", "role": "public", "channel": "webchat",
               "sender": session, **extra}
    return asyncio.run(get_runner(host).run(session, agent_turn(payload, host.principal, session)))


def leads(host) -> list:
    tasks = host.store().find(guards=Guards(host.env["ACCOUNT_ID"]), labels=["Task"])
    return [t for t in tasks if t.properties.get("kind") == "follow-up"]


def test_later_unanswered_questions_join_the_lead_and_the_contact_is_asked_once(bakery) -> None:
    vk = "vk-" + "a" * 40
    assert ask(bakery, "Can you make a cake shaped like a lighthouse?", visitorKey=vk) == DONT_KNOW
    assert ask(bakery, "ana@example.com", visitorKey=vk) == PASSED_ON.format(contact="ana@example.com")
    for question in ("Do you cater for 80 guests on 4 March?", "Do you sell dog biscuits?",
                     "Can I bring my own cake topper?"):
        reply = ask(bakery, question, visitorKey=vk)
        assert "email or phone" not in reply and "ana@example.com" in reply, reply
    (lead,) = leads(bakery)
    steps = " ".join(lead.properties.get("steps") or [])
    assert "80 guests" in steps and "dog biscuits" in steps and "cake topper" in steps
    # the same browser in a new conversation: still their lead, still no second ask
    reply = ask(bakery, "Do you deliver to the lighthouse island?", session="s2", visitorKey=vk)
    assert "email or phone" not in reply and "ana@example.com" in reply
    (lead,) = leads(bakery)
    assert "lighthouse island" in " ".join(lead.properties["steps"])
    # another visitor is asked for their own contact, and never told Ana's
    other = ask(bakery, "Do you sell dog biscuits?", session="s3", visitorKey="vk-" + "b" * 40)
    assert other == DONT_KNOW and "ana@example.com" not in other


def test_a_returning_visitor_is_known(bakery) -> None:
    memory = ["name: Ana", "mentioned: 4 March, 80 guests", "My name is Ana and I need a cake for 80 guests."]
    vk = "vk-" + "c" * 40
    greeting = ask(bakery, "Hello!", visitorKey=vk, visitorMemory=memory)
    assert "Ana" in greeting
    assert "Ana" in ask(bakery, "What is my name?", visitorKey=vk, visitorMemory=memory)
    assert "80 guests" in ask(bakery, "What did I order last time?", visitorKey=vk, visitorMemory=memory)
    assert "Ana" not in ask(bakery, "What is my name?", session="o", visitorKey="vk-" + "d" * 40)
    # an admin's turn never reads a visitor's memory
    assert "Ana" not in ask(bakery, "What is my name?", role="admin", visitorMemory=memory)


@pytest.mark.parametrize(("question", "expected"), [
    ("What's your address?", "12 Harbour Street"),
    ("Where are you located?", "12 Harbour Street"),
    ("Do you have a phone number?", "+44 20 7946 0000"),
    ("What is your phone number?", "+44 20 7946 0000"),
    ("How can I call you?", "+44 20 7946 0000"),
])
def test_the_business_facts_come_from_its_entity_and_documents(bakery, question: str, expected: str) -> None:
    assert expected in ask(bakery, question)


@pytest.mark.parametrize("question", ["Do you have nut-free cakes?", "Do you sell vegan croissants?"])
def test_one_incidental_word_is_not_an_answer(bakery, question: str) -> None:
    assert ask(bakery, question) == DONT_KNOW


def test_runner_type(bakery) -> None:
    assert isinstance(get_runner(bakery), MemoryRunner)
