"""The agent-files locator (host/runtime/agent_files.py): the assembled part of KNOWLEDGE.md is replaced,
the owner's part kept; keywords come from IDENTITY.md and account.json; bad input is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plughost.runtime import agent_files as af
from plughost.runtime.accounts import create_account
from plughost.util.errors import UserError


def test_the_assembled_part_is_replaced_and_the_owners_part_kept() -> None:
    first = af.merge_knowledge(None, "one")
    assert af.assembled_part(first) == "one"
    owned = "# Notes from the owner\nWe close on bank holidays.\n\n" + first + "\nSigned, the owner.\n"
    again = af.merge_knowledge(owned, "two")
    assert af.assembled_part(again) == "two"
    assert again.startswith("# Notes from the owner\nWe close on bank holidays.\n")
    assert again.endswith("Signed, the owner.\n")
    assert af.merge_knowledge(again, "two") == again
    by_hand = af.merge_knowledge("Written by hand.\n", "three")
    assert by_hand.startswith("Written by hand.\n\n") and af.assembled_part(by_hand) == "three"


def test_keywords_from_the_identity_and_the_account_each_once(plughost_home: Path) -> None:
    folder = create_account("acme", plughost_home)
    data = json.loads((folder / "account.json").read_text())
    data.update(publicAgent="counter", agents={"counter": {"knowledgeKeywords": ["Bread", "prices"]}})
    (folder / "account.json").write_text(json.dumps(data))
    af.write_file(plughost_home, "acme", "counter", af.IDENTITY, "---\nkeywords: bread, cakes\n---\nHello.\n")
    assert af.subscriptions(plughost_home, "acme", "counter") == ["bread", "cakes", "prices"]
    assert af.agent_slugs(plughost_home, "acme") == ["counter"]
    assert af.system_prompt(plughost_home, "acme", "counter") == "Hello."
    assert [r.missing for r in af.audit(plughost_home)] == [["KNOWLEDGE.md"]]
    af.write_knowledge(plughost_home, "acme", "counter", "Bread is baked at six.")
    assert af.reach(plughost_home, "acme", "counter").reachable
    assert af.system_prompt(plughost_home, "acme", "counter") == "Hello.\n\nBread is baked at six."


@pytest.mark.parametrize(("text", "expected"), [
    ("---\nkeywords: [a\n---\n", "IDENTITY.md: front matter: invalid YAML"),
    ("---\nkeywords: 3\n---\n", "IDENTITY.md: keywords: expected a list of keywords"),
])
def test_a_bad_identity_is_one_line_naming_the_file(plughost_home: Path, text: str, expected: str) -> None:
    create_account("acme", plughost_home)
    with pytest.raises(UserError, match=expected):
        af.write_file(plughost_home, "acme", "counter", af.IDENTITY, text)
    with pytest.raises(UserError, match="'Bad Slug' is not an agent slug"):
        af.agent_dir(plughost_home, "acme", "Bad Slug")
    with pytest.raises(UserError, match="'notes.txt' is not an agent file"):
        af.write_file(plughost_home, "acme", "counter", "notes.txt", "")
