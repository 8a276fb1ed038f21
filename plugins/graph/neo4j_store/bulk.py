"""`plughost graph import` into Neo4j (the store's ``import_session``): one :class:`Neo4jImport` per import, a transaction a batch.

Why a session rather than independent batches: an edge whose target is a line of a later batch
*waits* for that target, with its source's ``elementId`` (returned by the statement that
created the source), and is created by the statement that creates the target: a bare
``CREATE`` between a node found by its handle and a node of the statement, whose
``backlinkCount`` is counted in Python before it is written. Merged by key at the end instead,
such an edge costs two index seeks, an existence check and a property update of a stored node
(measured: about as much server time as the rest of its batch per edge).

A batch's ids that the account lacks are created in one statement (``q_import_create``) with
their edges: to a node of the same statement by position, to any other node of the account by
key (one seek and one ``backlinkCount`` update per target, not per edge). Ids the account holds
(a re-import) and repeats in the batch take the MERGE path every other write takes
(:func:`.writes.write_batch`), so re-importing converges. Edges that still have no target at the end
(and the merge path's edges to later lines) MERGE by key then, a batch at a time, and are
reported by line when their target never appeared.

Every write runs as the account's owner (``Principal.owner(account)``), so a new node whose line names no
``scope`` is stored ``admin`` (:data:`plughost.ports.graph.OWNER_SCOPE`) and a re-imported one keeps its own.

Session state changes only after a batch's transaction has committed (``execute_write`` may run
the transaction function more than once).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from plughost import Principal, UserError, log
from plughost.api.store import OWNER_SCOPE, ImportRow, WaitingEdges
from plughost.plugins.graph.analysis import INDEX_TEXT, index_texts
from plughost.plugins.graph.common import Prepared, check_name, iso, keywords_of, prepare_row
from plughost.plugins.graph.neo4j_store.queries import BASE_LABEL
from plughost.plugins.graph.neo4j_store.writes import clean_props, write_batch, write_edges, write_nodes

if TYPE_CHECKING:
    from plughost.plugins.graph.neo4j_store.store import Neo4jStore

NEO4J_IMPORT_BATCH = 50000
"""Nodes per import transaction on Neo4j unless ``--batch-size`` says otherwise: an edge between two
batches changes a node an earlier transaction stored (its relationship chain, and its
``backlinkCount`` when it is the target), where an edge inside a batch only adds to the new nodes,
so fewer, bigger batches (this module; at 20k nodes / 60k edges one batch
cost 4-6 server CPU-seconds, two 6-8, four 9-11, ten 11-13)."""

Q_PRESENT = f"""MATCH (n:{BASE_LABEL}) WHERE n.accountId = $accountId AND n.id IN $ids
RETURN collect(n.id) AS ids"""
"""Which of a batch's ids the account already holds (one lookup per import batch)."""

Q_FIX_BACKLINKS = f"""UNWIND $rows AS row
MATCH (b:{BASE_LABEL} {{accountId: $accountId, id: row.id}})
SET b.backlinkCount = b.backlinkCount - row.n"""
"""Waiting edges whose source vanished during the import: their targets' precounted backlinks."""


def q_import_create(edge_groups: Sequence[tuple[str, bool]]) -> str:
    """An import batch's new nodes in one ``CREATE`` (no MERGE: ``Q_PRESENT`` found none of
    them), then their edges: to a node of the same statement by position (``$e<i>``, one list per
    ``(type, with properties)`` of ``edge_groups``; no index lookup, ``backlinkCount``
    precomputed), from a node an earlier batch created by its handle (``$incoming``, also
    precounted), and to any other node of the account by key (``$out``, grouped by target).
    Returns the handles of the new nodes, the ``$out`` positions made and the ``$incoming``
    keys made."""
    parts = []
    for i, (etype, with_props) in enumerate(edge_groups):
        t = check_name(etype, "edge.type")
        carry, set_props = (", e.p AS p", " SET r = p") if with_props else ("", "")
        parts.append(f"CALL (ns) {{ UNWIND $e{i} AS e WITH ns[e.s] AS a, ns[e.t] AS b{carry} "
                     f"CREATE (a)-[r:`{t}`]->(b){set_props} }}")
    edges = "\n".join(parts)
    return f"""UNWIND $nodes AS row
CREATE (n:{BASE_LABEL}:$(row.labels)) SET n = row.props
WITH collect(n) AS ns
{edges}{chr(10) if edges else ""}CALL (ns) {{
  UNWIND $incoming AS e
  MATCH (a) WHERE elementId(a) = e.a AND a.accountId = $accountId AND a.id = e.src
  WITH a, ns[e.t] AS b, e
  CREATE (a)-[r:$(e.type)]->(b) SET r = e.p
  RETURN collect(e.k) AS came
}}
CALL (ns) {{
  UNWIND $out AS g
  MATCH (b:{BASE_LABEL} {{accountId: $accountId, id: g.target}})
  SET b.backlinkCount = coalesce(b.backlinkCount, 0) + size(g.edges)
  WITH b, g UNWIND g.edges AS e
  WITH ns[e.s] AS a, b, e
  CREATE (a)-[r:$(e.type)]->(b) SET r = e.p
  RETURN collect(e.pos) AS done
}}
RETURN [n IN ns | elementId(n)] AS handles, done, came"""


@dataclass
class Waiting:
    """An edge from a node this import created to an id no batch has written yet."""

    handle: str  # the source's elementId
    source: str
    type: str
    props: dict[str, Any]
    lines: list[int] = field(default_factory=list)  # one per time the file names this edge


@dataclass
class _Plan:
    """One batch as sent (built inside the transaction function, applied after it commits)."""

    made: int = 0
    waiting: dict[str, list[Waiting]] = field(default_factory=dict)  # new waiting edges, by target id
    resolved: set[str] = field(default_factory=set)  # target ids whose waiting edges were created
    late: list[tuple[str, str, str, Any, int]] = field(default_factory=list)


@dataclass
class _NewNodes:
    """A batch's nodes the account lacks (``nodes``, the statement's rows; ``pos_of``: id -> row)
    and the rest (ids it holds, repeats in the batch), which MERGE."""

    pos_of: dict[str, int] = field(default_factory=dict)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    rest: list[Prepared] = field(default_factory=list)

    @classmethod
    def of(cls, items: list[Prepared], ids: list[str], present: set[str], account: str) -> _NewNodes:
        out, now = cls(), iso(time.time())
        texts: list[Any] = []  # each new node's properties, for its analysed text
        for item, nid in zip(items, ids, strict=True):
            if nid in present or nid in out.pos_of:
                out.rest.append(item)
                continue
            out.pos_of[nid] = len(out.nodes)
            props = clean_props(item.properties)
            if props.get("scope") is None:
                props["scope"] = OWNER_SCOPE  # as write_defaults gives a new node under the owner's guards
            props.update(accountId=account, id=nid, createdAt=now, updatedAt=now, backlinkCount=0)
            keywords = keywords_of(item.properties)
            if keywords:
                props["keywordsLower"] = keywords
            if item.embedding is not None:
                props["embedding"] = item.embedding
            out.nodes.append({"labels": list(item.labels), "props": props})
            texts.append(item.properties)
        for node, text in zip(out.nodes, index_texts(texts), strict=True):
            if text:
                node["props"][INDEX_TEXT] = text
        return out


@dataclass
class _EdgeShapes:
    """A batch's edges sorted by how they are written. A new node has no edges yet, so its edges
    are created (once each: a repeat in the batch merges its properties, as MERGE would): to a new
    node of the batch (``inner``) or to another node by key (``outer``; ``also``: the positions
    repeating one); an old node's edges MERGE (``merged``)."""

    inner: dict[tuple[str, int, int], dict[str, Any]] = field(default_factory=dict)
    outer: dict[tuple[str, int, str], dict[str, Any]] = field(default_factory=dict)
    also: dict[int, list[int]] = field(default_factory=dict)
    merged: list[tuple[int, tuple[str, str, str, Any]]] = field(default_factory=list)

    @classmethod
    def of(cls, new: _NewNodes, ids: list[str], edges: list[tuple[int, int, str, str, Any]],
           plan: _Plan) -> _EdgeShapes:
        out = cls()
        for pos, (i, _, etype, to, props) in enumerate(edges):
            s = new.pos_of.get(ids[i])
            if s is None:
                out.merged.append((pos, (ids[i], etype, to, props)))
                continue
            t = new.pos_of.get(to)
            found = out.inner.get((etype, s, t)) if t is not None else out.outer.get((etype, s, to))
            if found is not None:
                found["p"].update(clean_props(props or {}))
                if t is None:
                    out.also.setdefault(found["pos"], []).append(pos)
                else:
                    plan.made += 1
            elif t is not None:
                out.inner[(etype, s, t)] = {"s": s, "t": t, "p": clean_props(props or {})}
                new.nodes[t]["props"]["backlinkCount"] += 1
                plan.made += 1
            else:
                out.outer[(etype, s, to)] = {"pos": pos, "s": s, "type": etype, "p": clean_props(props or {})}
        return out


class Neo4jImport:
    """One import of JSON lines into ``store`` for ``account_id`` (see the module docstring).

    ``create=False`` writes every batch through the MERGE path and every edge to a later line
    at the end, as any other write would (the reference the create path is tested against).
    """

    def __init__(self, store: Neo4jStore, account_id: str, *, create: bool = True) -> None:
        self.store = store
        self.account_id = account_id
        self.create = create
        self.waiting: WaitingEdges[None, Waiting] = WaitingEdges()  # by target id; the store resolves by id
        self.late: list[tuple[str, str, str, Any, int]] = []  # (source, type, to, props, line)

    def add(self, items: list[Prepared], edges: list[tuple[int, int, str, str, Any]], lines: list[int]) -> int:
        """Write one batch (one transaction); returns the edges made (with waiting ones it resolved)."""
        import neo4j

        merge = functools.partial(self._merge, items=items, edges=edges, lines=lines)
        if not self.create or any(item.id is None for item in items):  # a re-ingest by attachmentId
            plan = self.store.write(merge)
        else:
            try:
                plan = self.store.write(functools.partial(self._create, items=items, edges=edges, lines=lines))
            except neo4j.exceptions.ConstraintError:  # another writer created one of these ids meanwhile
                log("graph-import", op="concurrent-writer", lines=f"{lines[0]}-{lines[-1]}", action="merge")
                plan = self.store.write(merge)  # nothing of the failed transaction was written
        for target in plan.resolved:
            self.waiting.release(target)
        for target, found in plan.waiting.items():
            for w in found:
                self.waiting.wait(target, w)
        self.late += plan.late
        return plan.made

    def write(self, rows: list[ImportRow], skip: Callable[[int, str], None]) -> tuple[int, int]:
        """The batch write of an import session (:class:`plughost.ports.importing.BatchWriter`):
        each checked line prepared as any write is, then :meth:`add`."""
        items: list[Prepared] = []
        edges: list[tuple[int, int, str, str, Any]] = []
        lines: list[int] = []
        for r in rows:
            try:
                item, row_edges = prepare_row(r.row, self.account_id, "node", parsed=True,
                                              dims=self.store.dimensions, strict=True)
            except UserError as exc:
                skip(r.line, str(exc))
                continue
            edges.extend([(len(items), j, t, to, p) for j, (t, to, p) in enumerate(row_edges)])
            items.append(item)
            lines.append(r.line)
        return (len(items), self.add(items, edges, lines)) if items else (0, 0)

    def finish(self) -> tuple[int, list[tuple[int, str, str]]]:
        """MERGE what still waits by key; returns (edges made, (line, type, to) never resolved)."""
        rest = [(w.source, w.type, to, w.props, line) for to, w in self.waiting.left() for line in w.lines]
        rest += self.late
        self.late = []
        if not rest:
            return 0, []
        missing = self.store.create_edges([(s, t, to, p) for s, t, to, p, _ in rest],
                                          guards=Principal.system(self.account_id).guards,
                                          validated=True)
        lost = [(rest[pos][4], rest[pos][1], rest[pos][2]) for pos in missing]
        return len(rest) - len(missing), lost

    # ------------------------------------------------------------------ one batch
    def _merge(self, tx: Any, items: list[Prepared], edges: list[tuple[int, int, str, str, Any]],
               lines: list[int]) -> _Plan:
        ids, missing = write_batch(tx, items, edges, self.account_id, Principal.owner(self.account_id).guards)
        plan = _Plan(made=len(edges) - len(missing))
        for pos in missing:
            i, _, etype, to, props = edges[pos]
            plan.late.append((ids[i], etype, to, props, lines[i]))
        return plan

    def _create(self, tx: Any, items: list[Prepared], edges: list[tuple[int, int, str, str, Any]],
                lines: list[int]) -> _Plan:
        """The ids the account lacks are created with their edges and the edges waiting for
        them; ids it holds (or repeated in the batch) and their edges MERGE as in
        :func:`.writes.write_batch`."""
        account = self.account_id
        ids = [item.id or "" for item in items]  # add() sends only items with ids here
        present = set(tx.run(Q_PRESENT, {"accountId": account, "ids": list(dict.fromkeys(ids))}).single()["ids"])
        new = _NewNodes.of(items, ids, present, account)
        plan = _Plan()
        shapes = _EdgeShapes.of(new, ids, edges, plan)
        incoming = self._incoming(new)
        if new.nodes:
            self._create_new(tx, new, shapes, incoming, ids, edges, lines, plan)
        if new.rest:
            write_nodes(tx, new.rest, account, Principal.owner(account).guards)
        if shapes.merged:
            lost = write_edges(tx, [edge for _, edge in shapes.merged], account, known=ids)
            plan.made += len(shapes.merged) - len(lost)
            for j in lost:
                i, _, etype, to, props = edges[shapes.merged[j][0]]
                plan.late.append((ids[i], etype, to, props, lines[i]))
        return plan

    def _incoming(self, new: _NewNodes) -> list[dict[str, Any]]:
        """The waiting edges to the batch's new nodes (each counted in its target's backlinks)."""
        incoming: list[dict[str, Any]] = []
        for target, t in new.pos_of.items():
            for k, w in enumerate(self.waiting.waiting(target)):
                incoming.append({"a": w.handle, "src": w.source, "t": t, "type": w.type, "p": w.props,
                                 "k": f"{target}\n{k}"})
                new.nodes[t]["props"]["backlinkCount"] += 1
        return incoming

    def _create_new(self, tx: Any, new: _NewNodes, shapes: _EdgeShapes, incoming: list[dict[str, Any]],
                    ids: list[str], edges: list[tuple[int, int, str, str, Any]], lines: list[int],
                    plan: _Plan) -> None:
        """One ``q_import_create`` statement; the outer edges it did not make start waiting."""
        groups: dict[tuple[str, bool], list[dict[str, Any]]] = {}
        for (etype, _, _), e in shapes.inner.items():
            groups.setdefault((etype, bool(e["p"])), []).append(e)
        by_target: dict[str, list[dict[str, Any]]] = {}
        for (_, _, to), e in shapes.outer.items():
            by_target.setdefault(to, []).append(e)
        params: dict[str, Any] = {"nodes": new.nodes, "accountId": self.account_id, "incoming": incoming,
                                  "out": [{"target": to, "edges": group} for to, group in by_target.items()]}
        # Sorted: one statement text per set of edge shapes, whatever order a batch names them
        # in, so the server plans it once (a new text costs a plan: about 1 s on this machine).
        ordered = sorted(groups)
        params.update({f"e{i}": groups[shape] for i, shape in enumerate(ordered)})
        result = tx.run(q_import_create(ordered), params).single()
        handles, done, came = result["handles"], set(result["done"]), set(result["came"])
        for to, group in by_target.items():
            for e in group:
                repeats = shapes.also.get(e["pos"], [])
                if e["pos"] in done:
                    plan.made += 1 + len(repeats)
                    continue
                plan.waiting.setdefault(to, []).append(
                    Waiting(handles[e["s"]], ids[edges[e["pos"]][0]], e["type"], e["p"],
                            [lines[edges[p][0]] for p in (e["pos"], *repeats)]))
        self._came(tx, incoming, came, new.nodes, plan)

    def _came(self, tx: Any, incoming: list[dict[str, Any]], came: set[str], nodes: list[dict[str, Any]],
              plan: _Plan) -> None:
        """Count the waiting edges made; a source gone since (another writer deleted it) leaves
        its edges to the end (MERGE by key) and its target's backlinkCount corrected here."""
        by_target: dict[str, list[Waiting]] = {}
        fix: dict[str, int] = {}
        for e in incoming:
            target = nodes[e["t"]]["props"]["id"]
            w = self.waiting.waiting(target)[int(e["k"].rsplit("\n", 1)[1])]
            if e["k"] in came:
                plan.made += len(w.lines)
            else:
                by_target.setdefault(target, []).append(w)
                fix[target] = fix.get(target, 0) + 1
            plan.resolved.add(target)
        for target, lost in by_target.items():
            plan.late += [(w.source, w.type, target, w.props, line) for w in lost for line in w.lines]
        if fix:
            tx.run(Q_FIX_BACKLINKS, {"accountId": self.account_id,
                                     "rows": [{"id": t, "n": n} for t, n in fix.items()]}).consume()
