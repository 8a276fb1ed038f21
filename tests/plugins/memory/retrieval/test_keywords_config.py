"""Where an agent's knowledgeKeywords come from: account.json agents.<slug>.knowledgeKeywords."""

from __future__ import annotations

import json

import pytest

from plughost.plugins.memory.retrieval.keywords import agent_keywords
from plughost.util.errors import UserError


def write_account(home, data):
    path = home / "accounts" / "acct1" / "account.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_keywords_of_an_agent(plughost_home):
    write_account(plughost_home, {"agents": {"sales": {"knowledgeKeywords": ["pricing", "Pricing", "vat"]}}})
    assert agent_keywords(plughost_home, "acct1", "sales") == ["pricing", "vat"]
    assert agent_keywords(plughost_home, "acct1", "other") == []
    assert agent_keywords(plughost_home, "acct1", None) == []
    assert agent_keywords(plughost_home, "nope", "sales") == []


def test_more_than_five_keywords_is_a_clear_error(plughost_home):
    path = write_account(plughost_home, {"agents": {"sales": {"knowledgeKeywords": list("abcdef")}}})
    with pytest.raises(UserError, match=r"agents\.sales\.knowledgeKeywords: expected at most 5") as err:
        agent_keywords(plughost_home, "acct1", "sales")
    assert str(path) in str(err.value)


def test_bad_types_and_bad_json_name_the_file(plughost_home):
    write_account(plughost_home, {"agents": {"sales": {"knowledgeKeywords": "pricing"}}})
    with pytest.raises(UserError, match="expected a list of non-empty strings"):
        agent_keywords(plughost_home, "acct1", "sales")
    path = plughost_home / "accounts" / "acct1" / "account.json"
    path.write_text("{nope")
    with pytest.raises(UserError, match="account.json: invalid JSON at line 1 column 2"):
        agent_keywords(plughost_home, "acct1", "sales")
