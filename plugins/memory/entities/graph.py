"""The entity graph a turn's extraction writes, through the GraphStore port only (docs/graph.md#entities).

Shapes::

    (:Message)-[:MENTIONS]->(:Entity {entityName, entityKey, kind, scope, agents})
    (:Message)-[:STATES]->(:Fact {subjectName, predicate, objectName, subjectKey, objectKey,
                                  validFrom, validTo?, supersededBy?, sourceId, scope, agents})
    (:Fact)-[:ABOUT]->(:Entity)              (the subject)

No property of either is in the full-text union (``plughost.ports.graph.TEXT_PROPERTIES``): the
derived nodes are an index, and short documents named "Maya" or "Lisbon" in the BM25 index
would change every turn's BM25 scores (document frequencies and lengths), so writing them
changes nothing for a search that does not take the entity path.

An Entity's id is derived from the account, its kind and key *and the source Message's scope and
agents*: repeats merge, and an Entity (or Fact) is always exactly as visible as every Message that
reaches it, so the store's guards confine it as they confine the Message. A Fact's id is derived
from its subject, predicate and object the same way, so a fact said twice is one node (its
``validFrom`` the earliest). For a single-valued predicate (:data:`~.extract.SINGLE_VALUED`: lives
in, works at, "my name is") the facts of one subject are ordered by ``validFrom`` and each but the
latest is closed: ``validTo`` is the next one's ``validFrom`` and ``supersededBy`` its id.

A derived node lives as long as a live source of its own scope and agents links to it:
:func:`withdraw` removes a source's edges when it is re-scoped, re-tagged, its text changes or it is
deleted, hard-deletes what no such source reaches any more (and reopens the fact a withdrawn one had
closed); :func:`sweep` does the same for the whole account (``reindex --entities``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from plughost import GraphStore, Guards, Node, Principal, log
from plughost.api.store import write_defaults
from plughost.api.util import read_time
from plughost.plugins.memory.embedding import indexed_form
from plughost.plugins.memory.entities.extract import Extraction, extract, known_keys, normalise
from plughost.plugins.memory.entities.states import single_valued
from plughost.plugins.memory.settings import MEMORY_ENTITIES

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


def derivation(props: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a node's derived entities and facts follow from: scope, agents, text, speaker and time
    (a change of any of them withdraws them, :func:`withdraw`)."""
    return (*_visibility(props), indexed_form.turn_text(props), speaker_of(props), indexed_form.when(props))


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


def write(store: GraphStore, messages: Iterable[tuple[str, Mapping[str, Any]]], *,
          guards: Guards, known: Iterable[str] = ()) -> dict[str, int]:
    """Extract and write the entities and facts of already-written Messages of ``guards``' account;
    returns the counts.

    Batched: one ``upsert_many`` for the nodes, one ``create_edges``, one ``find`` per
    (subject, single-valued predicate) to order the facts, one ``upsert_many`` to close the old ones.
    """
    started = time.perf_counter()
    # the scope and agents the store gave (or gives) the Messages: their entities are stored alike
    messages = [(mid, {**write_defaults(guards, props), **props}) for mid, props in messages]
    planned = plan(guards.account_id, messages, known)
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
    store.upsert_many(rows, guards=guards)
    missing = store.create_edges(planned.edges, guards=guards)
    closed: dict[str, dict[str, Any]] = {}
    for (_, predicate, _, _), fids in groups.items():
        if not single_valued(predicate):
            continue
        members = {**{k: v for k, v in stored.items()
                      if v.get("subjectKey") == planned.facts[fids[0]]["subjectKey"]
                      and v.get("predicate") == predicate
                      and _visibility(v) == _visibility(planned.facts[fids[0]])},
                   **{fid: planned.facts[fid] for fid in fids}}
        closed.update(_order(list(members.items())))
    if closed:
        store.upsert_many([{"id": fid, "labels": [FACT_LABEL], "properties": props} for fid, props in closed.items()],
                          guards=guards)
    counts = {"entities": len(planned.rows), "facts": len(planned.facts), "edges": len(planned.edges) - len(missing),
              "closed": len(closed)}
    log("memory-entities", "op=write", **counts, ms=round((time.perf_counter() - started) * 1000, 1))
    return counts


def write_stored(store: GraphStore, account_id: str, message_ids: Iterable[str]) -> dict[str, int]:
    """:func:`write` for Messages another plugin stored (the turn recorder's transcripts, the
    channels' turns: the ``plughost_messages_stored`` hook), read back under the account's guards,
    oldest first so their facts close in order; the conversation's speakers are the known names."""
    guards = Principal.owner(account_id).guards
    nodes = [n for n in (store.get(i, guards=guards) for i in dict.fromkeys(message_ids))
             if n is not None and extractable(n.labels, n.properties)]
    turns = sorted(((n.id, dict(n.properties)) for n in nodes), key=lambda t: indexed_form.order_key(t[0], t[1]))
    known = list(dict.fromkeys(name for _, props in turns if (name := speaker_of(props))))
    return write(store, turns, guards=guards, known=known) if turns else \
        {"entities": 0, "facts": 0, "edges": 0, "closed": 0}


def backfill(store: GraphStore, account_id: str, *, batch_size: int = 500) -> dict[str, int]:
    """Extract the entities and facts of every live node of the account with text (turns, notes,
    chunks: :func:`extractable`; ``plughost memory reindex --entities``): every node read first
    (writes reorder the pages), then written by batch, oldest first; re-running it changes nothing
    (ids are derived, repeats merge)."""
    guards = Principal.owner(account_id).guards
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
        counts = write(store, turns[start:start + batch_size], guards=guards, known=known)
        for key, value in counts.items():
            total[key] += value
    log("memory-entities", "op=backfill", **total)
    return total


# lifecycle ---------------------------------------------------------------------------------
LINK_BATCH = 500


def _candidates(store: GraphStore, account_id: str, source_id: str, versions: Iterable[Mapping[str, Any]]) -> set[str]:
    """The ids of the derived nodes a source may link to: what its extraction gives for each of its
    ``versions`` (the known speakers as the account's person entities), the facts naming it as
    their ``sourceId``, and its derived 1-hop neighbours."""
    acct = Principal.owner(account_id).guards
    known = [str(n.properties.get("entityName")) for n in store.find(guards=acct, labels=[ENTITY_LABEL],
                                                                      where={"kind": "person"}, limit=1000)]
    out: set[str] = set()
    for props in versions:
        planned = plan(account_id, [(source_id, {**write_defaults(acct, props), **props})], known)
        out.update(planned.rows, planned.facts)
    out.update(n.id for n in store.find(guards=acct, labels=[FACT_LABEL], where={"sourceId": source_id}, limit=1000))
    for nb in store.expand([source_id], guards=acct).get(source_id, []):
        if nb.direction == "out" and nb.type in (MENTIONS, STATES):
            out.add(nb.node.id)
    return out


def withdraw(store: GraphStore, source_ids: Iterable[str], *, guards: Guards,
             before: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, int]:
    """Unlink sources (re-scoped, re-tagged, changed or deleted) from their derived nodes and remove
    what no other live source of the same scope and agents still reaches (:func:`prune`).

    Only sources within ``guards`` (the caller's, soft delete aside) are withdrawn; ``before`` gives
    a source's properties before the change (its derived ids follow from them). The cleanup runs
    under the account's own guards: it only removes.
    """
    account_id = guards.account_id
    acct = Principal.owner(account_id).guards
    candidates: set[str] = set()
    unlinked = 0
    for sid in dict.fromkeys(source_ids):
        node = store.get(sid, guards=guards, include_deleted=True)
        if node is None or DERIVED_LABELS.intersection(node.labels):
            continue
        versions = [node.properties, *([(before or {})[sid]] if sid in (before or {}) else [])]
        found = _candidates(store, account_id, sid, versions)
        for cid in sorted(found):
            for etype in (MENTIONS, STATES):
                unlinked += store.delete_edge(sid, cid, etype, guards=acct)
        candidates |= found
    nodes = [n for cid in sorted(candidates) if (n := store.get(cid, guards=acct, include_deleted=True)) is not None]
    counts = {"unlinked": unlinked, **prune(store, account_id, nodes)}
    log("memory-entities", "op=withdraw", **counts)
    return counts


def _reaching(store: GraphStore, acct: Guards, nodes: Sequence[Node], edge_type: str) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = {}
    for start in range(0, len(nodes), LINK_BATCH):
        out.update(store.linked([n.id for n in nodes[start:start + LINK_BATCH]], edge_type, guards=acct))
    return out


def prune(store: GraphStore, account_id: str, nodes: Sequence[Node]) -> dict[str, int]:
    """Of the derived ``nodes``, hard-delete those no live source of their own scope and agents
    reaches (a Fact: a ``STATES`` source; an Entity: a ``MENTIONS`` source or a kept Fact ``ABOUT``
    it), unlink the sources whose visibility no longer matches, point a kept Fact's ``sourceId`` at
    a source it still has, and reopen the facts a removed one had closed."""
    acct = Principal.owner(account_id).guards
    unlinked = 0

    def live(node: Node, sources: list[Node], edge_type: str) -> list[Node]:
        nonlocal unlinked
        vis = _visibility(node.properties)
        keep = []
        for src in sources:
            if _visibility(src.properties) == vis:
                keep.append(src)
            elif edge_type != ABOUT:  # a source now of another visibility: its edge is stale
                unlinked += store.delete_edge(src.id, node.id, edge_type, guards=acct)
        return keep

    facts = [n for n in nodes if FACT_LABEL in n.labels]
    gone_facts: list[Node] = []
    moved: list[dict[str, Any]] = []
    states = _reaching(store, acct, facts, STATES)
    for fact in facts:
        sources = live(fact, states.get(fact.id, []), STATES) if not fact.deleted else []
        if not sources:
            gone_facts.append(fact)
        elif fact.properties.get("sourceId") not in {s.id for s in sources}:
            moved.append({"id": fact.id, "labels": [FACT_LABEL], "properties": {"sourceId": sources[0].id}})
    if gone_facts:
        store.delete_nodes([f.id for f in gone_facts], guards=acct)
    if moved:
        store.upsert_many(moved, guards=acct)
    ents = [n for n in nodes if ENTITY_LABEL in n.labels]
    mentions, about = _reaching(store, acct, ents, MENTIONS), _reaching(store, acct, ents, ABOUT)
    gone_ents = [e for e in ents if e.deleted or not (live(e, mentions.get(e.id, []), MENTIONS)
                                                        or live(e, about.get(e.id, []), ABOUT))]
    if gone_ents:
        store.delete_nodes([e.id for e in gone_ents], guards=acct)
    reopened = _reopen(store, account_id, gone_facts)
    return {"unlinked": unlinked, "facts_removed": len(gone_facts), "entities_removed": len(gone_ents),
            "reopened": reopened}


def _reopen(store: GraphStore, account_id: str, removed: Sequence[Node]) -> int:
    """Re-order the single-valued facts of the subjects whose facts were removed: a fact a removed
    one had closed is open again when nothing later is left (``validTo`` / ``supersededBy`` follow)."""
    acct = Principal.owner(account_id).guards
    groups = {(str(f.properties.get("subjectKey")), str(f.properties.get("predicate")),
               repr(_visibility(f.properties))): f for f in removed
              if single_valued(str(f.properties.get("predicate")))}
    changed: list[dict[str, Any]] = []
    for (subject_key, predicate, _), gone in groups.items():
        vis = _visibility(gone.properties)
        members = sorted(((n.id, n.properties) for n in store.find(
            guards=acct, labels=[FACT_LABEL], where={"subjectKey": subject_key, "predicate": predicate}, limit=1000)
            if _visibility(n.properties) == vis), key=lambda f: (str(f[1].get("validFrom") or ""), f[0]))
        for i, (fid, props) in enumerate(members):
            nxt = members[i + 1] if i + 1 < len(members) else None
            want = {"validTo": nxt[1].get("validFrom"), "supersededBy": nxt[0]} if nxt else \
                {"validTo": None, "supersededBy": None}
            if any(props.get(k) != v for k, v in want.items()):
                changed.append({"id": fid, "labels": [FACT_LABEL], "properties": want})
    if changed:
        store.upsert_many(changed, guards=acct)
    return len(changed)


def sweep(store: GraphStore, account_id: str) -> dict[str, int]:
    """:func:`prune` over every Entity and Fact of the account (``plughost memory reindex --entities``,
    before the backfill): what only deleted, re-scoped or re-tagged sources reached goes."""
    acct = Principal.owner(account_id).guards
    nodes: list[Node] = []
    for label in (FACT_LABEL, ENTITY_LABEL):
        offset = 0
        while True:
            page = store.find(guards=acct, labels=[label], limit=1000, offset=offset)
            nodes += page
            if len(page) < 1000:
                break
            offset += len(page)
    counts = prune(store, account_id, nodes)
    log("memory-entities", "op=sweep", nodes=len(nodes), **counts)
    return counts
