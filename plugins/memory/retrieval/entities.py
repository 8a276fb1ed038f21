"""ENTITIES: the third retrieval path (``PLUGHOST_GS_ENTITIES``): the question's entities → the
turns and notes that mention them, one hop (docs/retrieval.md#entities).

The question goes through the same extractor as the turns (:mod:`plughost.plugins.memory.entities.extract`,
capitalised first words included, since a question often starts with a name); each key is looked
up among the ``Entity`` nodes under the caller's guards (every kind: "Maya" is the speaker of some
turns and a name in others), and the nodes with a ``MENTIONS`` edge into them are read with
:meth:`GraphStore.linked`, under the same guards. A node's score is the IDF-weighted share of the
question's found keys it mentions, ``Σ idf(key) / Σ idf(every found key)`` with
``idf = ln(1 + N / df)`` (``N`` the Messages the caller can read, recounted every few minutes,
``df`` the nodes mentioning the key): a turn naming every entity of the question scores 1, a name mentioned by thousands of turns
counts little next to a rare one. Pure over the store it is given; no store call when the question
names nothing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from plughost import GraphStore, Guards, Hit, Node
from plughost.api.store import MESSAGE_LABEL
from plughost.plugins.memory.entities.extract import extract
from plughost.plugins.memory.entities.graph import DERIVED_LABELS, ENTITY_LABEL, MENTIONS
from plughost.plugins.memory.retrieval.fuse import RankedList

MAX_KEYS = 8
ENTITIES_PER_KEY = 50
SOURCES_PER_ENTITY = 5000
COUNT_TTL_S = 300.0
_COUNTS: dict[tuple[Any, ...], tuple[float, int]] = {}  # (store, guards) -> (when, Messages readable)


def readable_messages(store: GraphStore, guards: Guards) -> int:
    """The IDF's ``N``: the Messages the caller can read, counted at most every :data:`COUNT_TTL_S`
    seconds per store and guards (a count scans the account; ``N`` only sets the scale)."""
    scopes = tuple(guards.allowed_scopes) if guards.allowed_scopes is not None else None
    key = (id(store), guards.account_id, scopes, guards.agent_slug)
    now = time.monotonic()
    hit = _COUNTS.get(key)
    if hit is None or now - hit[0] > COUNT_TTL_S:
        if len(_COUNTS) > 256:
            _COUNTS.clear()
        hit = _COUNTS[key] = (now, store.count(guards=guards, labels=[MESSAGE_LABEL]))
    return hit[1]


def query_keys(query: str) -> list[str]:
    """The question's entity keys, in order, at most :data:`MAX_KEYS`."""
    found = extract(query, at_start=True)
    return list(dict.fromkeys(m.key for m in found.mentions))[:MAX_KEYS]


def entity_list(store: GraphStore, query: str, guards: Guards, k: int,
                labels: Sequence[str] | None = None) -> tuple[RankedList | None, dict[str, Any]]:
    """The entity channel's ranked list for ``query`` (None when it names nothing known) and its stats."""
    keys = query_keys(query)
    stats: dict[str, Any] = {"entity_keys": len(keys), "entity_nodes": 0}
    if not keys:
        return None, stats
    by_key: dict[str, list[str]] = {}
    for key in keys:
        found = store.find(guards=guards, labels=[ENTITY_LABEL], where={"entityKey": key}, limit=ENTITIES_PER_KEY)
        if found:
            by_key[key] = [n.id for n in found]
    stats["entity_nodes"] = sum(len(v) for v in by_key.values())
    if not by_key:
        return None, stats
    sources = store.linked([i for ids in by_key.values() for i in ids], MENTIONS, guards=guards,
                           limit=SOURCES_PER_ENTITY)
    wanted = set(labels) if labels else None
    nodes: dict[str, Node] = {}
    mentions: dict[str, set[str]] = {}  # key -> ids of the nodes mentioning it
    for key, ids in by_key.items():
        for eid in ids:
            for node in sources.get(eid, []):
                if DERIVED_LABELS.intersection(node.labels) or (wanted is not None and not wanted.intersection(node.labels)):
                    continue
                nodes.setdefault(node.id, node)
                mentions.setdefault(key, set()).add(node.id)
    if not mentions:
        return None, stats
    total = max(readable_messages(store, guards), max(len(v) for v in mentions.values()), 1)
    idf = {key: math.log(1 + total / len(mentioning)) for key, mentioning in mentions.items()}
    norm = sum(idf.values())
    scores: dict[str, float] = {}
    for key, mentioning in mentions.items():
        for nid in mentioning:
            scores[nid] = scores.get(nid, 0.0) + idf[key] / norm
    order = sorted(scores, key=lambda nid: (-scores[nid], nid))[:k]
    return RankedList("entity", [Hit(nodes[nid], scores[nid]) for nid in order], query), stats
