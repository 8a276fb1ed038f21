"""Keyword subscriptions: an agent's ``knowledgeKeywords`` (at most 5) widen every search it makes.

The agent config is the account's ``account.json`` → ``agents.<slug>.knowledgeKeywords``
(``<PLUGHOST_HOME>/accounts/<ACCOUNT_ID>/account.json``). Per keyword two searches run — BM25
over the text union and a ``keywords``-property match scored 1.0 — both *without* the agent-tag
filter (subscriptions reach content not tagged for the agent) but *with* the scope filter, the
soft-delete filter and the account (the store applies those from the narrowed :class:`Guards`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from plughost import GraphStore, Guards, UserError
from plughost.api.accounts import read_account_json
from plughost.plugins.memory.retrieval.fuse import RankedList

MAX_KEYWORDS = 5


def account_file(home: Path, account_id: str) -> Path:
    return home / "accounts" / account_id / "account.json"


def agent_keywords(home: Path, account_id: str, agent_slug: str | None) -> list[str]:
    """The subscribed keywords of ``agent_slug``; [] for admin (no agent) or when none are set."""
    if not agent_slug:
        return []
    path = account_file(home, account_id)
    data = read_account_json(path, missing_ok=True)  # a bad file: one line naming it (exit 2)
    agents = data.get("agents")
    agent = agents.get(agent_slug) if isinstance(agents, dict) else None
    if not isinstance(agent, dict) or agent.get("knowledgeKeywords") is None:
        return []
    field = f"{path}: agents.{agent_slug}.knowledgeKeywords"
    value = agent["knowledgeKeywords"]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise UserError(f"{field}: expected a list of non-empty strings")
    if len(value) > MAX_KEYWORDS:
        raise UserError(f"{field}: expected at most {MAX_KEYWORDS} keywords, got {len(value)}")
    out: list[str] = []
    for v in value:
        if v.strip().casefold() not in (o.casefold() for o in out):
            out.append(v.strip())
    return out


def subscription_guards(guards: Guards) -> Guards:
    """The same account and scopes, without the agent-tag filter."""
    return dataclasses.replace(guards, agent_slug=None)


def keyword_lists(store: GraphStore, keywords: Sequence[str], guards: Guards, k: int,
                  labels: Sequence[str] | None = None) -> list[RankedList]:
    """Two BM25-channel lists per keyword: full-text hits and ``keywords``-tag hits (1.0 each)."""
    narrowed = subscription_guards(guards)
    lists: list[RankedList] = []
    for keyword in keywords[:MAX_KEYWORDS]:
        lists.append(RankedList("bm25", store.fulltext_search(keyword, k, guards=narrowed, labels=labels),
                                f"keyword-text:{keyword}"))
        tagged = store.keyword_search(keyword, k, guards=narrowed, labels=labels)
        for hit in tagged:
            hit.score = 1.0
        lists.append(RankedList("bm25", tagged, f"keyword-tag:{keyword}"))
    return lists
