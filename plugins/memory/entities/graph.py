"""The entity graph a turn's extraction writes, through the GraphStore port only (docs/graph.md#entities).

Shapes::

    (:Message)-[:MENTIONS]->(:Entity {entityName, entityKey, kind, scope, agents})
    (:Message)-[:STATES]->(:Fact {subjectName, predicate, objectName, subjectKey, objectKey,
                                  validFrom, validTo?, supersededBy?, sourceId, scope, agents})
    (:Fact)-[:ABOUT]->(:Entity)              (the subject)

No property of either is in the full-text union (``host.ports.graph.TEXT_PROPERTIES``): the
derived nodes are an index, and short documents named "Maya" or "Lisbon" in the BM25 index
would change every turn's BM25 scores (document frequencies and lengths), so writing them
changes nothing for a search that does not take the entity path.

An Entity's id is derived from the account, its kind and key *and the source Message's scope and
agents*: repeats merge, and an Entity (or Fact) is always exactly as visible as every Message that
reaches it, so the store's guards confine it as they confine the Message. A Fact's id is derived
from its subject, predicate and object the same way, so a fact said twice is one node (its
``validFrom`` the earliest). For a single-valued predicate (:data:`~.extract.SINGLE_VALUED`: lives
in, works at, "my name is") the facts of one subject are ordered by ``validFrom`` and each but the
latest is closed: ``validTo`` is the next one's ``validFrom`` and ``supersededBy`` its id. Nothing
is ever deleted.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from host.ports.graph import GraphStore, Guards, write_defaults
from host.util.log import log
from host.util.times import read_time
from plugins.memory import indexed_form
from plugins.memory.entities.extract import SINGLE_VALUED, Extraction, extract, known_keys, normalise
from plugins.memory.settings import MEMORY_ENTITIES

ENTITY_LABEL = "Entity"
FACT_LABEL = "Fact"
MENTIONS = "MENTIONS"
STATES = "STATES"
ABOUT = "ABOUT"
DERIVED_LABELS = frozenset({ENTITY_LABEL, FACT_LABEL})
"""Labels of the nodes derived from Messages: an index, never a search result of their own."""


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """``PLUGHOST_MEMORY_ENTITIES``: whether Message writes extract entities and facts."""
    return bool(MEMORY_ENTITIES.read(env))


def extractable(labels: Iterable[str], props: Mapping[str, Any]) -> bool:
    """Whether a written node is read for entities: a turn, a note or a chunk with text (``text``,
    ``content`` or ``body``), never an Entity or Fact itself."""
    return not DERIVED_LABELS.intersection(labels) and bool(indexed_form.turn_text(props))


def speaker_of(props: Mapping[str, Any]) -> str | None:
    """The turn's speaker by name (``senderName``, else ``sender``); a bare role names nobody."""
    for key in ("senderName", "sender"):
        value = props.get(key)
        if isinstance(value, str) and value.strip() and normalise(value):
            return value.strip()[:120]
    return None


def _visibility(props: Mapping[str, Any]) -> tuple[str | None, list[str] | None]:
    scope = props.get("scope")
    agents = props.get("agents")
    if isinstance(agents, str):
        agents = [agents]
    return (scope if isinstance(scope, str) else None,
            sorted(str(a) for a in agents) if isinstance(agents, (list, tuple)) else None)


def _digest(*parts: Any) -> str:
    joined = "\x1f".join("" if p is None else ",".join(p) if isinstance(p, list) else str(p) for p in parts)
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def entity_id(account_id: str, kind: str, key: str, scope: str | None, agents: list[str] | None) -> str:
    return "ent-" + _digest(account_id, kind, key, scope, agents)


def fact_id(account_id: str, subject_key: str, predicate: str, object_key: str, scope: str | None,
            agents: list[str] | None) -> str:
    return "fact-" + _digest(account_id, subject_key, predicate, object_key, scope, agents)


def _guarded(props: dict[str, Any], scope: str | None, agents: list[str] | None) -> dict[str, Any]:
    if scope is not None:
        props["scope"] = scope
    if agents is not None:
        props["agents"] = agents
    return props


@dataclass
class Planned:
    """What a batch of turns writes: node rows, edges, and the facts to order per subject."""

    rows: dict[str, dict[str, Any]]
    edges: list[tuple[str, str, str, Mapping[str, Any] | None]]
    facts: dict[str, dict[str, Any]]  # fact id -> its properties (the new ones)


def plan(account_id: str, messages: Iterable[tuple[str, Mapping[str, Any]]], known: Iterable[str] = ()) -> Planned:
    """The rows and edges for ``(message id, properties)`` pairs; pure."""
    speakers = known_keys(known)
    out = Planned({}, [], {})
    for msg_id, props in messages:
        speaker = speaker_of(props)
        at = read_time(indexed_form.when(props)) if indexed_form.when(props) else None
        found: Extraction = extract(indexed_form.turn_text(props), speaker=speaker,
                                    when=at.replace(tzinfo=None) if isinstance(at, datetime) else None, known=speakers)
        scope, agents = _visibility(props)
        kinds: dict[str, str] = {}
        for m in found.mentions:
            eid = entity_id(account_id, m.kind, m.key, scope, agents)
            kinds.setdefault(m.key, m.kind)
            if eid not in out.rows:
                out.rows[eid] = {"id": eid, "labels": [ENTITY_LABEL],
                                 "properties": _guarded({"entityName": m.name, "entityKey": m.key, "kind": m.kind},
                                                        scope, agents)}
            out.edges.append((msg_id, MENTIONS, eid, None))
        valid_from = indexed_form.when(props) or None
        for f in found.facts:
            fid = fact_id(account_id, f.subject_key, f.predicate, f.object_key, scope, agents)
            subject = entity_id(account_id, kinds.get(f.subject_key, "name"), f.subject_key, scope, agents)
            if subject not in out.rows:
                out.rows[subject] = {"id": subject, "labels": [ENTITY_LABEL], "properties": _guarded(
                    {"entityName": f.subject, "entityKey": f.subject_key, "kind": kinds.get(f.subject_key, "name")}, scope, agents)}
            props_f = _guarded({"subjectName": f.subject, "predicate": f.predicate, "objectName": f.object,
                                "subjectKey": f.subject_key, "objectKey": f.object_key, "sourceId": msg_id,
                                **({"validFrom": valid_from} if valid_from else {})}, scope, agents)
            prior = out.facts.get(fid)
            if prior is None or (valid_from and str(prior.get("validFrom") or "~") > valid_from):
                out.facts[fid] = props_f
            out.edges.append((msg_id, STATES, fid, None))
            out.edges.append((fid, ABOUT, subject, None))
    return out


def _order(facts: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """validTo / supersededBy for one subject's facts of one single-valued predicate (oldest first)."""
    ordered = sorted(facts, key=lambda f: (str(f[1].get("validFrom") or ""), f[0]))
    out: dict[str, dict[str, Any]] = {}
    for (fid, props), nxt in zip(ordered, ordered[1:], strict=False):
        want = {"validTo": nxt[1].get("validFrom"), "supersededBy": nxt[0]}
        if any(props.get(k) != v for k, v in want.items()):
            out[fid] = want
    return out


def write(store: GraphStore, account_id: str, messages: Iterable[tuple[str, Mapping[str, Any]]], *,
          guards: Guards, known: Iterable[str] = ()) -> dict[str, int]:
    """Extract and write the entities and facts of already-written Messages; returns the counts.

    Batched: one ``upsert_many`` for the nodes, one ``create_edges``, one ``find`` per
    (subject, single-valued predicate) to order the facts, one ``upsert_many`` to close the old ones.
    """
    started = time.perf_counter()
    # the scope and agents the store gave (or gives) the Messages: their entities are stored alike
    messages = [(mid, {**write_defaults(guards, props), **props}) for mid, props in messages]
    planned = plan(account_id, messages, known)
    if not planned.rows and not planned.facts:
        return {"entities": 0, "facts": 0, "edges": 0, "closed": 0}
    groups: dict[tuple[str, str, str | None, tuple[str, ...] | None], list[str]] = {}
    for fid, props in planned.facts.items():
        scope, agents = _visibility(props)
        groups.setdefault((props["subjectKey"], props["predicate"], scope, tuple(agents) if agents else None),
                          []).append(fid)
    stored: dict[str, dict[str, Any]] = {}
    for (subject_key, predicate, scope, tagged), _ in groups.items():
        for node in store.find(guards=guards, labels=[FACT_LABEL],
                               where={"subjectKey": subject_key, "predicate": predicate}, limit=1000):
            if _visibility(node.properties) == (scope, list(tagged) if tagged else None):
                stored[node.id] = dict(node.properties)
    for fid, props in planned.facts.items():  # a fact said again keeps its first validFrom
        old = stored.get(fid)
        if old and old.get("validFrom") and str(old["validFrom"]) <= str(props.get("validFrom") or "~"):
            props["validFrom"] = old["validFrom"]
            props["sourceId"] = old.get("sourceId", props["sourceId"])
    rows = list(planned.rows.values()) + [{"id": fid, "labels": [FACT_LABEL], "properties": props}
                                          for fid, props in planned.facts.items()]
    store.upsert_many(rows, account_id=account_id, guards=guards)
    missing = store.create_edges(planned.edges, account_id=account_id, guards=guards)
    closed: dict[str, dict[str, Any]] = {}
    for (_, predicate, _, _), fids in groups.items():
        if predicate not in SINGLE_VALUED:
            continue
        members = {**{k: v for k, v in stored.items()
                      if v.get("subjectKey") == planned.facts[fids[0]]["subjectKey"]
                      and v.get("predicate") == predicate
                      and _visibility(v) == _visibility(planned.facts[fids[0]])},
                   **{fid: planned.facts[fid] for fid in fids}}
        closed.update(_order(list(members.items())))
    if closed:
        store.upsert_many([{"id": fid, "labels": [FACT_LABEL], "properties": props} for fid, props in closed.items()],
                          account_id=account_id, guards=guards)
    counts = {"entities": len(planned.rows), "facts": len(planned.facts), "edges": len(planned.edges) - len(missing),
              "closed": len(closed)}
    log("memory-entities", "op=write", **counts, ms=round((time.perf_counter() - started) * 1000, 1))
    return counts


def backfill(store: GraphStore, account_id: str, *, batch_size: int = 500) -> dict[str, int]:
    """Extract the entities and facts of every live node of the account with text (turns, notes,
    chunks: :func:`extractable`; ``plughost memory reindex --entities``): every node read first
    (writes reorder the pages), then written by batch, oldest first; re-running it changes nothing
    (ids are derived, repeats merge)."""
    guards = Guards(account_id)
    turns: list[tuple[str, dict[str, Any]]] = []
    offset = 0
    while True:
        page = store.find(guards=guards, limit=1000, offset=offset)
        turns += [(n.id, dict(n.properties)) for n in page if extractable(n.labels, n.properties)]
        if len(page) < 1000:
            break
        offset += len(page)
    turns.sort(key=lambda t: indexed_form.order_key(t[0], t[1]))  # oldest first: facts close in their order
    known = list(dict.fromkeys(name for _, props in turns if (name := speaker_of(props))))
    total = {"nodes": len(turns), "entities": 0, "facts": 0, "edges": 0, "closed": 0}
    for start in range(0, len(turns), max(1, batch_size)):
        counts = write(store, account_id, turns[start:start + batch_size], guards=guards, known=known)
        for key, value in counts.items():
            total[key] += value
    log("memory-entities", "op=backfill", **total)
    return total
