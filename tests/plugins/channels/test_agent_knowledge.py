"""Both runners use the public agent's curated files (docs/agents.md#runners): the memory runner
answers from KNOWLEDGE.md first, then retrieval; the claude runner's public turn gets IDENTITY.md,
SOUL.md and KNOWLEDGE.md in its system prompt; an admin turn gets neither."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from channels_support import ACCOUNT, agent_turn

from plughost.plugins.channels.claude_runner import CURATED_INTRO
from plughost.plugins.channels.knowledge import pieces
from plughost.plugins.channels.runner import session_id_for
from plughost.plugins.channels.runner_choice import get_runner
from plughost.runtime import agent_files as af
from plughost.runtime.tooltable import call_tool
from tests.plugins.channels.test_claude_runner import OWNER, calls, payload, stand_in  # noqa: F401

HANDBOOK = {"attachmentId": "hb", "title": "Shop handbook", "scope": "public", "content": (
    "# Shop handbook\n\n## Delivery\n\nWe deliver cakes within the city for 5 euros.\n")}
GLUTEN = {"attachmentId": "gl", "scope": "public", "content": (
    "# Gluten\n\nWe label every loaf.\n\n## Fridays\n\nGluten-free loaves are baked on Fridays only.\n")}
CURATED = ("Ask for Maria at the counter about wedding cakes.\n\n"
           + af.merge_knowledge(None, "## Gluten\nSource: Gluten (matched: gluten)\n\n"
                                      "### Fridays\nGluten-free loaves are baked on Fridays only."))


def _agent(home: Path) -> None:
    path = home / "accounts" / ACCOUNT / "account.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "publicAgent": "counter"}))
    af.write_file(home, ACCOUNT, "counter", af.IDENTITY, "---\nkeywords: [gluten]\n---\nYou are the counter.\n")
    af.write_file(home, ACCOUNT, "counter", af.SOUL, "Warm and brief.\n")
    af.write_file(home, ACCOUNT, "counter", af.KNOWLEDGE, "Ask for Maria at the counter about wedding cakes.\n")


def ask(host, text: str, role: str = "public") -> str:
    turn = {"text": text, "payload": f"## Context\n{text}", "role": role, "channel": "webchat", "sender": "v"}
    return asyncio.run(get_runner(host).run("s", agent_turn(turn, host.principal, "s")))


def test_knowledge_paragraphs_keep_their_document_and_section() -> None:
    found = pieces(CURATED)
    assert [(p.source, p.text) for p in found] == [
        ("KNOWLEDGE.md", "Ask for Maria at the counter about wedding cakes."),
        ("Gluten › Fridays", "Gluten-free loaves are baked on Fridays only.")]


def test_the_memory_runner_answers_from_knowledge_first_then_retrieval(make_host, account, plughost_home: Path,
                                                                       capfd) -> None:
    _agent(plughost_home)
    host = make_host(PLUGHOST_AGENT="memory")
    call_tool(host, "memory", "memory-ingest", HANDBOOK)
    call_tool(host, "memory", "memory-ingest", GLUTEN)  # public, matches the agent's keyword: assembled
    assert ask(host, "When do you bake gluten-free loaves?") == (
        "Gluten-free loaves are baked on Fridays only.\n(Source: Gluten › Fridays)")
    assert "op=memory-answer outcome=answer match=1.0 source=KNOWLEDGE.md#2 from=knowledge" in capfd.readouterr().err
    assert ask(host, "Who do I ask about wedding cakes?").startswith("Ask for Maria at the counter")
    # what KNOWLEDGE.md does not hold comes from retrieval, as before
    assert ask(host, "Do you deliver cakes?").startswith("We deliver cakes within the city for 5 euros.")
    # the owner's own turn is answered from the whole memory, not the public agent's file
    assert "KNOWLEDGE.md" not in ask(host, "When do you bake gluten-free loaves?", role="admin")


def test_the_claude_runners_public_prompt_carries_the_agents_files(make_host, account, plughost_home: Path,
                                                                   tmp_path: Path, stand_in) -> None:  # noqa: F811
    _agent(plughost_home)
    host = make_host(**stand_in)
    call_tool(host, "memory", "memory-ingest", GLUTEN)
    runner = get_runner(host)
    for role, sender in (("public", "v1"), ("admin", "o1")):
        sid = session_id_for(ACCOUNT, f"webchat:{sender}")
        asyncio.run(runner.run(sid, agent_turn(payload(role, "Gluten-free?", sender), OWNER, sid)))
    public, admin = (c["argv"] for c in calls(tmp_path))
    prompt = public[public.index("--append-system-prompt") + 1]
    assert prompt.startswith("You are the counter.\n\nWarm and brief.\n\nAsk for Maria at the counter")
    assert "Gluten-free loaves are baked on Fridays only." in prompt and "keywords:" not in prompt
    assert f"{CURATED_INTRO}\n\n" in prompt and "plughost:knowledge" not in prompt
    assert "--append-system-prompt" not in admin
