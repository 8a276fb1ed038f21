"""The surfacing core in process: the replaceable hook, the rules and the budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from surfacing_support import ACCOUNT, seed

from plughost.plugins.memory.surfacing import rules
from plughost.plugins.memory.surfacing.core import SurfaceRequest, render, surface
from plughost.ports.graph import Guards
from plughost.runtime import hooktable
from plughost.runtime.hookspecs import hookimpl


class _Brand:
    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    @hookimpl
    def plughost_surface_context(self, query: str, guards: Guards, limit: int, exclude: list[str]):
        self.calls.append({"query": query, "guards": guards, "limit": limit, "exclude": list(exclude)})
        return [{"id": f"brand-{i}", "label": "Note", "title": f"Brand note {i}", "text": f"brand text {i} " * 5, "score": 1.0}
                for i in range(limit + 2) if f"brand-{i}" not in exclude]


def test_hook_plughost_surface_context(make_host, plughost_home: Path) -> None:
    seed(plughost_home)
    host = make_host(PLUGHOST_SURFACE_LIMIT="2")
    builtin = host.first(hooktable.SURFACE_CONTEXT, query="Project Falcon budget board", guards=Guards(ACCOUNT),
                         limit=3, exclude=["falcon-deadline"])
    assert [i["id"] for i in builtin][:1] == ["falcon-budget"] and "falcon-deadline" not in [i["id"] for i in builtin]
    assert set(builtin[0]) == {"id", "label", "title", "text", "score", "source"}
    brand = _Brand()
    with host.temporary_plugin(brand, "brand-surface"):
        first = surface(host, SurfaceRequest("s-1", "tell me about the brand notes please", ACCOUNT, role="public"))
        second = surface(host, SurfaceRequest("s-1", "tell me about the brand notes please", ACCOUNT, role="public"))
    assert [i["id"] for i in first.items] == ["brand-0", "brand-1"]
    assert [i["id"] for i in second.items] == ["brand-2", "brand-3"]
    assert brand.calls[0]["guards"] == Guards(ACCOUNT, ("public",), None)
    assert brand.calls[1]["exclude"] == ["brand-0", "brand-1"]


def test_a_raising_provider_surfaces_nothing(make_host, plughost_home: Path) -> None:
    class Broken:
        @hookimpl
        def plughost_surface_context(self, query: str):
            raise RuntimeError("provider down")

    host = make_host()
    with host.temporary_plugin(Broken(), "broken"):
        result = surface(host, SurfaceRequest("s-2", "what is the falcon budget again", ACCOUNT))
    assert result.output is None and result.reason == "search-failed"


@pytest.mark.parametrize("prompt,previous,query", [
    ("and the deadline?", "falcon budget", "falcon budget and the deadline?"),
    ("why?", "falcon budget", "falcon budget why?"),
    ("what about it", "falcon budget", "falcon budget what about it"),
    ("How do I rotate the signing keys on the staging cluster", "falcon budget",
     "How do I rotate the signing keys on the staging cluster"),
])
def test_follow_ups_fold_into_the_previous_query(prompt: str, previous: str, query: str) -> None:
    decision = rules.decide(prompt, previous)
    assert decision.query == query
    assert decision.base == (previous if decision.folded else prompt)


def test_render_respects_the_budget_with_whole_items_first() -> None:
    items = [{"id": f"n{i}", "label": "Chunk", "title": f"T{i}", "text": "word " * 200} for i in range(5)]
    text, kept = render(items, 700)
    assert len(text) <= 700 and kept and text.count("(id: ") == len(kept)


def test_the_hook_path_account_rule_is_the_hosts() -> None:
    """``context`` is stdlib only (the warm hook runs without the host), so it restates the rule."""
    from plughost.plugins.memory.surfacing import context
    from plughost.runtime.accounts import ACCOUNT_ID

    assert context._ACCOUNT.pattern == ACCOUNT_ID.pattern
