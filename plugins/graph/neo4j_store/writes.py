"""Node and edge writes of the Neo4j store, each inside the caller's transaction ``tx``: property
values as Neo4j can hold them, a re-ingest's document, the write guards against the stored
state, the MERGE of nodes by label set and of edges by type (:mod:`.queries`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from plughost import Guards, WriteDenied
from plughost.api.store import (
    TEXT_PROPERTIES,
    can_change,
    check_confined,
    check_write,
    confined_ok,
    needs_own,
    own_conversation,
    write_defaults,
)
from plughost.plugins.graph.analysis import INDEX_TEXT, index_texts
from plughost.plugins.graph.common import Prepared, iso, keywords_of, new_id
from plughost.plugins.graph.neo4j_store.queries import (
    Q_CONFINED_ENDS,
    Q_OWN_CONVERSATION,
    Q_REINGEST,
    Q_REINGEST_TREE,
    Q_STORED,
    Q_STORED_TEXT,
    guard_params,
    q_edges,
    q_upsert,
)

_ARRAY_ITEMS = frozenset({str, int, float, bool})


def _storable_list(value: list[Any]) -> bool:
    """Whether Neo4j can store the list as an array property: items of one scalar type, no null."""
    kinds = {type(v) for v in value}
    return len(kinds) <= 1 and kinds <= _ARRAY_ITEMS


def clean_props(props: Mapping[str, Any]) -> dict[str, Any]:
    """Neo4j properties hold scalars and arrays of one scalar type only: nested objects, and lists
    of mixed types or with nulls (which the embedded store keeps as they are), are stored as JSON
    text rather than failing the whole write."""
    out = {}
    for key, value in props.items():
        kind = type(value)
        if kind is str or kind is int or kind is float or kind is bool or value is None:  # the usual, cheaply
            out[key] = value
        elif isinstance(value, Mapping) or (isinstance(value, list) and not _storable_list(value)):
            out[key] = json.dumps(value, ensure_ascii=False)
        else:
            out[key] = value
    return out


def reingest(tx: Any, account_id: str, attachment_id: Any, guards: Guards | None) -> str | None:
    """The document an attachment was ingested as, its Section/Chunk hierarchy deleted for
    replacement (None: no such document). With ``guards``, the document and every node of its
    hierarchy must be within them (``WriteDenied`` otherwise): a re-ingest replaces them all."""
    params = {"accountId": account_id, "attachmentId": attachment_id}
    if guards is not None:
        found = tx.run(Q_REINGEST_TREE, params).single()
        if found and not all(can_change(guards, props) for props in found["guarded"]):
            raise WriteDenied(f"attachmentId: document '{found['id']}' (or part of it) is outside what "
                              "this process can read (ALLOWED_SCOPES / AGENT_SLUG); nothing was written")
    rows = list(tx.run(Q_REINGEST, params))
    return rows[0]["id"] if rows else None


def own_of(tx: Any, guards: Guards) -> str | None:
    """The conversation a confined writer's session owns (:func:`plughost.ports.graph.own_conversation`),
    read in the write transaction."""
    if guards.session is None:
        return None
    rows = tx.run(Q_OWN_CONVERSATION, {"accountId": guards.account_id, "session": guards.session})
    return own_conversation(guards.session, [(r["id"], r["sessionId"], bool(r["deleted"])) for r in rows])


def confined_hidden(tx: Any, guards: Guards | None, ids: Sequence[str]) -> list[str]:
    """The ids among ``ids`` a confined writer cannot write or link to: another conversation's
    Conversation or Message nodes (``confined_ok``), read in the write transaction."""
    if guards is None or not guards.confined or not ids:
        return []
    rows = list(tx.run(Q_CONFINED_ENDS, {"accountId": guards.account_id, "ids": list(dict.fromkeys(ids))}))
    if not rows:
        return []
    own = own_of(tx, guards)
    return [r["id"] for r in rows
            if not confined_ok(guards, own, r["id"], r["labels"], {"conversationId": r["conversationId"]})]


def check_guards(tx: Any, guards: Guards, ids: list[str], props_of: list[dict[str, Any]], account_id: str,
                 labels_of: Sequence[Sequence[str]] | None = None) -> None:
    """Every node of one write, from its stored state (read in this transaction) to the merged
    one, under the guards; a new node gets its default scope / agent when it names none. A
    Conversation or Message, before and after, must be the confined writer's own (``check_confined``)."""
    rows = list(tx.run(Q_STORED, {"accountId": account_id, "ids": list(dict.fromkeys(ids))}))
    stored = {r["id"]: {k: v for k, v in dict(r["props"]).items() if v is not None} for r in rows}
    stored_labels = {r["id"]: list(r["labels"]) for r in rows}
    after: dict[str, dict[str, Any]] = {}
    after_labels: dict[str, list[str]] = {}
    own: list[str | None] = []
    for pos, (nid, props) in enumerate(zip(ids, props_of, strict=True)):
        before = stored.get(nid)
        merged = after.get(nid, dict(before) if before is not None else {})
        merged.update(props)
        merged = {k: v for k, v in merged.items() if v is not None}
        if before is None and nid not in after:
            extra = write_defaults(guards, merged)
            props.update(extra)
            merged.update(extra)
        check_write(guards, nid, before, merged)
        after[nid] = merged
        labels = after_labels.setdefault(nid, list(stored_labels.get(nid, [])))
        labels.extend(x for x in (labels_of[pos] if labels_of is not None else ()) if x not in labels)
        if needs_own(guards, labels):
            if not own:
                own.append(own_of(tx, guards))
            if before is not None:
                check_confined(guards, own[0], nid, stored_labels.get(nid, []), before)
            check_confined(guards, own[0], nid, labels, merged, after=True)


_TEXT_KEYS = frozenset(TEXT_PROPERTIES)


def set_index_text(tx: Any, ids: list[str], props_of: list[dict[str, Any]], raw_of: list[Mapping[str, Any]],
                   account_id: str) -> None:
    """:data:`INDEX_TEXT` into the properties of each write that touches a text property: the
    analysed text of the node as it will be (its stored text properties, read in this transaction,
    merged with the write's; a later write of one id merges onto the earlier). A write without text
    properties leaves the stored text as it is."""
    touched = [pos for pos, raw in enumerate(raw_of) if not _TEXT_KEYS.isdisjoint(raw)]
    if not touched:
        return
    rows = tx.run(Q_STORED_TEXT, {"accountId": account_id, "ids": list(dict.fromkeys(ids[p] for p in touched)),
                                  "textKeys": list(TEXT_PROPERTIES)})
    text_of_id: dict[str, dict[str, Any]] = {r["id"]: dict(r["pairs"]) for r in rows}
    merged_of = []
    for pos in touched:
        merged = text_of_id.setdefault(ids[pos], {})
        merged.update((k, v) for k, v in raw_of[pos].items() if k in _TEXT_KEYS)
        merged_of.append({k: v for k, v in merged.items() if v is not None})
    for pos, text in zip(touched, index_texts(merged_of), strict=True):
        props_of[pos][INDEX_TEXT] = text


def write_nodes(tx: Any, items: list[Prepared], account_id: str, guards: Guards | None = None) -> list[str]:
    """MERGE prepared nodes (a KnowledgeDocument without an id whose ``attachmentId`` exists is a
    re-ingest: :func:`reingest`); with ``guards`` every node is checked against its stored state
    first (:func:`check_guards`). Returns their ids."""
    now = iso(time.time())
    for item in items:
        if item.id is None and "KnowledgeDocument" in item.labels and item.properties.get("attachmentId"):
            item.id = reingest(tx, account_id, item.properties["attachmentId"], guards)
    ids = [item.id or new_id() for item in items]
    props_of = [clean_props(item.properties) for item in items]
    if guards is not None:
        check_guards(tx, guards, ids, props_of, account_id, [item.labels for item in items])
    set_index_text(tx, ids, props_of, [item.properties for item in items], account_id)
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for nid, item, props in zip(ids, items, props_of, strict=True):
        groups.setdefault(item.labels, []).append({
            "id": nid, "props": props, "keywords": keywords_of(item.properties) or None,
            "embedding": item.embedding,
        })
    for labels, rows in groups.items():
        tx.run(q_upsert(labels), {"rows": rows, "accountId": account_id, "now": now}).consume()
    return ids


def write_edges(tx: Any, wanted: list[tuple[str, str, str, Any]], account_id: str,
                guards: Guards | None = None, known: Sequence[str] = ()) -> list[int]:
    """MERGE edges ``(source, type, target, properties)`` by node ids; returns the positions with an
    unknown end (with ``guards``, an end outside ``known``, the ids this write made, counts only if
    the guards can read it)."""
    by_shape: dict[tuple[str, bool], list[dict[str, Any]]] = {}
    for pos, (src, etype, dst, props) in enumerate(wanted):
        by_shape.setdefault((etype, bool(props)), []).append(
            {"pos": pos, "source": src, "target": dst, "props": clean_props(props or {})})
    done: set[int] = set()
    params: dict[str, Any] = {"accountId": account_id}
    if guards is not None:
        params.update(guard_params(guards), known=list(known))
        written = set(known)
        hidden = set(confined_hidden(tx, guards, [end for w in wanted for end in (w[0], w[2]) if end not in written]))
        if hidden:  # an end outside its own conversation is an end it cannot read
            by_shape = {shape: [r for r in rows if r["source"] not in hidden and r["target"] not in hidden]
                        for shape, rows in by_shape.items()}
    for (etype, with_props), rows in by_shape.items():
        if not rows:
            continue
        query = q_edges(etype, guarded=guards is not None, props=with_props)
        done.update(tx.run(query, {**params, "rows": rows}).single()["done"])
    return [pos for pos in range(len(wanted)) if pos not in done]


def write_batch(tx: Any, items: list[Prepared], edges: list[tuple[int, int, str, str, Any]], account_id: str,
                guards: Guards | None = None) -> tuple[list[str], list[int]]:
    """Prepared nodes and their edges ``(item, edge, type, to, properties)``; returns the node ids
    and the positions in ``edges`` with an unknown end."""
    ids = write_nodes(tx, items, account_id, guards)
    missing = write_edges(tx, [(ids[i], t, to, p) for i, _, t, to, p in edges], account_id, guards, known=ids)
    return ids, missing
