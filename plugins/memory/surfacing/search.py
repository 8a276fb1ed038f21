"""The built-in ``plughost_surface_context``: a guarded ``memory-search`` shaped into surfacing items.

The same pipeline as the tool (flags from the environment, boosts from the hook), over the
prompt's content words (a prompt is a sentence; BM25 over its function words is slow and finds
nothing more), with the caller's :class:`Guards` instead of the process's, no graph expansion (one more store call for
context the agent can fetch itself) and no conversation messages (another session's chat is
not knowledge, and a public session must not see a stranger's), nor a visitor's memory slices
(docs/channels.md#visitor-memory). A row is kept when its vector
similarity reaches ``PLUGHOST_SURFACE_MIN_SIMILARITY`` (default 0.3) or, found by BM25 alone,
when its BM25 score, min-max normalised among the rows that may surface, reaches
``PLUGHOST_SURFACE_MIN_BM25`` (default 0.5): surfacing
runs before every prompt, so a weak match is noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from plughost import Guards, Setting, log
from plughost.api import hooks
from plughost.plugins.memory.retrieval.flags import SearchFlags
from plughost.plugins.memory.retrieval.pipeline import MAX_LIMIT, SearchRequest, search
from plughost.plugins.memory.settings import SURFACE_MIN_BM25, SURFACE_MIN_SIMILARITY
from plughost.plugins.memory.surfacing import rules
from plughost.plugins.memory.surfacing.recall import boost as recall_boost
from plughost.plugins.memory.surfacing.recall import cached_decisions, ranking_enabled

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

SKIPPED_LABELS = frozenset({"Message", "Conversation", "WebchatMessage", "TelegramMessage", "WhatsAppMessage",
                            "VisitorSlice"})  # a visitor's own memory reaches their turns alone
TITLE_KEYS = ("title", "name", "headline", "subject", "key")
TEXT_KEYS = ("compiledTruth", "summary", "body", "content", "text", "description", "value", "bodyPreview")
BM25_ONLY_FLOOR = SURFACE_MIN_BM25.default
DEFAULT_MIN_SIMILARITY = SURFACE_MIN_SIMILARITY.default


def _float(env: Any, which: Setting[float]) -> float:
    """A floor setting; a value that is no number between 0 and 1 is one ``bad-setting`` line and the default."""
    if which.problem(env) is None:
        return which.read(env)
    log("surface", "op=error", reason="bad-setting", name=which.name, expected="0..1", got=(which.raw(env) or "")[:40],
        using=which.default)
    return which.default


def item_of(row: Any) -> dict[str, Any]:
    props = row.props
    labels = [label for label in row.node.labels]
    title = next((str(props[k]) for k in TITLE_KEYS if props.get(k)), "")
    text = next((props[k] for k in TEXT_KEYS if props.get(k)), "")
    if isinstance(text, list):
        text = ", ".join(str(x) for x in text)
    return {"id": row.id, "label": labels[0] if labels else "Node", "title": title, "text": str(text)[:600],
            "score": round(row.score, 4), "source": props.get("notePath")}


def surface_items(host: Host, query: str, guards: Guards, limit: int, exclude: Sequence[str]) -> list[dict[str, Any]]:
    flags = SearchFlags.from_env(host.env)
    boosts = [c.item for c in host.collect(hooks.RETRIEVAL_BOOSTS)] if flags.boosts else []
    if boosts and ranking_enabled(host.env):  # serve answers many accounts: pins of the caller's
        boosts = [b for b in boosts if b.name != "recall"] + [recall_boost(host.home, guards.account_id)]
    embedder = host.embedder()
    want = min(MAX_LIMIT, 3 * limit + len(exclude))
    outcome = search(host.store(), SearchRequest(rules.search_terms(query), want, expand_hops=0), guards=guards, embedder=embedder,
                     flags=flags, extra_boosts=boosts, emit_log=False)
    floor = _float(host.env, SURFACE_MIN_SIMILARITY)
    bm25_floor = _float(host.env, SURFACE_MIN_BM25)
    skip = set(exclude)
    if ranking_enabled(host.env):  # snoozed: not offered unprompted (memory-search still finds them)
        skip |= {i for i, d in cached_decisions(host.home, guards.account_id).items() if d == "snoozed"}
    rows = [r for r in outcome.rows if not SKIPPED_LABELS.intersection(r.node.labels)]
    low, high = min((r.bm25 for r in rows), default=0.0), max((r.bm25 for r in rows), default=0.0)
    items = []
    for row in rows:
        if row.id in skip:
            continue
        bm25 = 1.0 if high <= low else (row.bm25 - low) / (high - low)  # among the rows that may surface
        strong = row.vector >= floor if row.vector else bm25 >= bm25_floor
        if not strong:
            continue
        items.append(item_of(row))
        if len(items) >= limit:
            break
    return items
