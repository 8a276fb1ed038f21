"""`plughost graph migrate --to neo4j`: the embedded store into Neo4j, then the install on Neo4j.

Every account in the embedded file is copied in batches, each batch one Neo4j transaction: first
the nodes (labels, properties, scope, agents, embeddings, then their ``createdAt``/``updatedAt``/
``deletedAt``), then the edges (``MERGE``: a repeat makes none). After each committed batch the
position (the last node id, per account and phase) is written to ``<PLUGHOST_HOME>/graph-migrate.json``,
so a run killed at any point (kill -9 included) is continued by running the command again: it
starts after the last recorded batch, and the batch it redoes lands on the same ids.

Then it verifies, per account: the node count per label and the edge count equal on both
sides; a sample of full-text searches on a node's own words agrees (the same result set whenever
the whole set fits in the top 10; on average the top-5 overlap, the node found and, over the
searches long enough to rank, the rank correlation of the shared top 10, each at least its
threshold, printed), and vector searches on a node's own
embedding find it at the same score (vectors: on the labels Neo4j
indexes, ``VECTOR_LABELS``; the embedded store scores every label's). Only then does it record the
install's store in ``<PLUGHOST_HOME>/.env`` (``PLUGHOST_STORE=neo4j`` and the ``NEO4J_*`` connection,
:func:`plughost.runtime.install_record.record_store`), which every later process reads (serve, the
MCP servers, the CLI). The embedded file is left as it was: ``PLUGHOST_STORE=sqlite`` in that
``.env`` goes back to it (without what was written to Neo4j since).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plughost import Principal, UserError, log
from plughost.api.store import VECTOR_LABELS, stamps_of
from plughost.api.util import write_atomic
from plughost.plugins.graph.common import prepare_row, text_of
from plughost.plugins.graph.export import line_of

STATE_FILE = "graph-migrate.json"
SAMPLE = 20
"""Searches compared per account (full-text and vector each)."""
TOP = 10
"""Hits compared per sampled full-text search (twice as many are fetched, so a run of equal scores
across the cut is ordered whole, :func:`by_score`)."""
OVERLAP_MIN = 0.8
"""What the full-text check promises on average: the two stores' top 5 for a node's own words
share this much, and the node is in Neo4j's top 10 for this share of the searches that find it
embedded. Both index the same analysed terms (:mod:`plughost.plugins.graph.analysis`) and score
BM25 alike, but not bit for bit: Lucene's IDF is ``log(1 + ...)`` where FTS5's is ``log(...)``,
and Lucene rounds document lengths to a byte. Equal scores come out in each store's own order
(the embedded file's row order, Lucene's segment order), so each side's runs of equal scores are
ordered by node id before the lists are compared (:func:`by_score`)."""
RANK_MIN = 0.8
"""The mean rank correlation promised (Kendall's tau of the shared top 10, over the searches
:data:`RANK_SHARED` can rank)."""
RANK_SHARED = 5
"""A search's rank correlation counts when both top 10s share at least this many hits, ordered by at
least this many pairs of untied scores: fewer is too short a list to rank (on a small store, the
whole list is a few hits and one swap is a tau of 0)."""
TIE = 0.05
"""Two scores within this share of each other are a tie on that side, and the pair is not ranked:
Lucene rounds document lengths to a byte (a few percent of a score), and on a small store a common
term's IDF differs most (Lucene ``log(1 + ..)``, FTS5 ``log(..)`` near 0), so near-equal scores swap
between the stores without either being wrong."""
SAME_SETS_MIN = 1.0
"""The share of searches whose whole result set fits in the top 10 where Neo4j finds the same set."""
FIX_COUNTS = ("a count differs: erase the account in Neo4j, remove graph-migrate.json from PLUGHOST_HOME and "
              "run graph migrate again")
"""The verified line's ``fix=`` when a count differs."""
FIX_SEARCHES = ("the counts agree and searches rank apart: Neo4j scores against all it holds, so migrate into a "
                "database holding only this install (the rank-differs lines show each search)")
"""The verified line's ``fix=`` when only searches differ."""
CONNECTION_KEYS = ("NEO4J_URI", "NEO4J_USER", "NEO4J_USERNAME", "NEO4J_PASSWORD", "NEO4J_DATABASE")


class Checkpoint:
    """What a run has committed, per account and phase (``<home>/graph-migrate.json``)."""

    def __init__(self, path: Path, target: str) -> None:
        self.path = path
        self.target = target
        self.accounts: dict[str, dict[str, Any]] = {}
        self.resumed = False
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise UserError(f"{path}: unreadable ({exc}); remove it to start the migration over") from None
        if isinstance(data, dict) and data.get("target") == target and isinstance(data.get("accounts"), dict):
            self.accounts = data["accounts"]
            self.resumed = True

    def of(self, account: str) -> dict[str, Any]:
        return self.accounts.setdefault(account, {"nodes": "", "nodes_done": False, "edges": "",
                                                  "edges_done": False})

    def save(self) -> None:
        write_atomic(self.path, json.dumps({"target": self.target, "accounts": self.accounts}, indent=1))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def migrate(source: Any, target_for: Callable[[str], Any], *, home: Path, target: str, batch: int,
            only: str | None = None, sample: int = SAMPLE) -> dict[str, Any]:
    """Copy every account of ``source`` (the embedded store) into the Neo4j stores ``target_for(account)``
    gives, resuming from ``home``'s checkpoint; returns ``{accounts, copied_nodes, copied_edges, mismatches}``
    (the nodes and edges this run wrote: a resumed run counts what it did, not what an earlier one did;
    the ``verified`` line counts what each side holds)."""
    accounts = source.accounts()
    if only is not None and any(a != only for a in accounts):
        others = [a for a in accounts if a != only]
        raise UserError(f"graph migrate: the embedded store holds {len(others)} other account(s) besides '{only}' "
                        "(ACCOUNT_ID) and the whole install moves; run it as the install's operator with ACCOUNT_ID "
                        "unset (ACCOUNT_ID= plughost graph migrate --to neo4j)")
    state = Checkpoint(home / STATE_FILE, target)
    for account in accounts:  # before anything is written: never over another install's data
        progress = state.of(account)
        if progress.get("started") or progress["nodes"] or progress["nodes_done"]:
            continue  # this install's own earlier run: resume it
        store = target_for(account)
        try:
            held = sum(store.label_counts(account_id=account).values())
        finally:
            store.close()
        if held:
            raise UserError(f"graph migrate: {target} already holds {held} node(s) of account '{account}' that this "
                            "install did not migrate; nothing was written (migrate into a database without that "
                            "account, or erase it there first)")
    for account in accounts:
        state.of(account)["started"] = True  # saved before the first write: a kill -9 after it resumes
    state.save()
    log("graph-migrate", "start", accounts=len(accounts), batch=batch, target=target,
        resumed=str(state.resumed).lower())
    totals = {"accounts": len(accounts), "copied_nodes": 0, "copied_edges": 0, "mismatches": 0}
    for account in accounts:
        store = target_for(account)
        try:
            done = state.of(account)
            totals["copied_nodes"] += _nodes(source, store, account, done, state, batch)
            totals["copied_edges"] += _edges(source, store, account, done, state, batch)
            totals["mismatches"] += len(verify(source, store, account, sample=sample))
        finally:
            store.close()
    return totals


def _progress(phase: str, account: str, done: int, total: int, started: float) -> None:
    seconds = time.perf_counter() - started
    log("graph-migrate", "progress", account=account[:8], phase=phase, done=done, total=total,
        rate=f"{done / seconds:.0f}" if seconds > 0 else "0")


def _nodes(source: Any, store: Any, account: str, done: dict[str, Any], state: Checkpoint, batch: int) -> int:
    if done["nodes_done"]:
        return 0
    total = source.scan_count(account_id=account)
    session = store.import_session(account)
    dims = getattr(store, "dimensions", None)
    written, started = 0, time.perf_counter()
    while True:
        nodes = source.scan_nodes(account_id=account, after=done["nodes"], limit=batch)
        if not nodes:
            break
        vectors = source.export_embeddings([n.id for n in nodes if n.has_embedding], account_id=account)
        items, stamps = [], []
        for node in nodes:
            row = line_of(node, vectors.get(node.id), None)
            item, _ = prepare_row(row, account, f"node {node.id}", dims=dims)
            items.append(item)
            stamps.append((node.id, *stamps_of(row["stamps"])))
        session.add(items, [], list(range(len(items))))
        store.restore_stamps(stamps, account_id=account)  # its own transaction: a kill between the two is
        done["nodes"] = nodes[-1].id                       # redone from the checkpoint, both idempotent
        done["nodes_count"] = int(done.get("nodes_count", 0)) + len(nodes)
        written += len(nodes)
        state.save()
        _progress("nodes", account, int(done["nodes_count"]), total, started)
    session.finish()
    done["nodes_done"] = True
    state.save()
    return written


def _edges(source: Any, store: Any, account: str, done: dict[str, Any], state: Checkpoint, batch: int) -> int:
    if done["edges_done"]:
        return 0
    total = source.edge_count(account_id=account)
    written, lost, started = 0, 0, time.perf_counter()
    while True:
        nodes = source.scan_nodes(account_id=account, after=done["edges"], limit=batch)
        if not nodes:
            break
        mine = {n.id for n in nodes}
        edges = [(s, t, d, p or None) for s, t, d, p in source.node_edges(sorted(mine), account_id=account)
                 if s in mine]
        if edges:
            lost += len(store.create_edges(edges, guards=Principal.system(account).guards, validated=True))
        done["edges"] = nodes[-1].id
        done["edges_count"] = int(done.get("edges_count", 0)) + len(edges)
        written += len(edges)
        state.save()
        _progress("edges", account, int(done["edges_count"]), total, started)
    if lost:
        log("graph-migrate", "edges-lost", account=account[:8], edges=lost, reason="an end not found in Neo4j")
    done["edges_done"] = True
    state.save()
    return written


def verify(source: Any, store: Any, account: str, *, sample: int = SAMPLE) -> list[str]:
    """What differs between the two sides for ``account`` (each also logged); empty when they agree."""
    problems: list[str] = []
    ours, theirs = source.label_counts(account_id=account), store.label_counts(account_id=account)
    for label in sorted(set(ours) | set(theirs)):
        if ours.get(label, 0) != theirs.get(label, 0):
            problems.append(f"label {label}: {ours.get(label, 0)} embedded, {theirs.get(label, 0)} neo4j")
    e_ours, e_theirs = source.edge_count(account_id=account), store.edge_count(account_id=account)
    if e_ours != e_theirs:
        problems.append(f"edges: {e_ours} embedded, {e_theirs} neo4j")
    check = _Searches(source, store, account)
    for node in _sample(source, account, sample):
        check.fulltext(node)
        problems += check.vector(node)
    overlap, recall, tau, same = (sum(v) / len(v) if v else 1.0
                                  for v in (check.overlaps, check.kept, check.taus, check.same))
    if overlap < OVERLAP_MIN:
        problems.append(f"full-text: mean top-5 overlap {overlap:.2f} below {OVERLAP_MIN} over {len(check.overlaps)} searches")
    if recall < OVERLAP_MIN:
        problems.append(f"full-text: the searched node in neo4j's top 10 for {recall:.2f} of searches, below {OVERLAP_MIN}")
    if tau < RANK_MIN:
        problems.append(f"full-text: mean rank correlation {tau:.2f} below {RANK_MIN} over the {len(check.taus)} "
                        f"searches sharing at least {RANK_SHARED} hits (scores within {TIE:.0%} are ties, not ranked)")
    if same < SAME_SETS_MIN:
        problems.append(f"full-text: the same result set for {same:.2f} of the {len(check.same)} searches with "
                        f"fewer than {TOP} hits, below {SAME_SETS_MIN}")
    for problem in problems:
        log("graph-migrate", "mismatch", account=account[:8], detail=problem)
    counted = len(problems) - sum(p.startswith(("full-text:", "vector search")) for p in problems)
    fix = {} if not problems else {"fix": FIX_COUNTS if counted else FIX_SEARCHES}
    log("graph-migrate", "verified", account=account[:8], labels=len(ours), nodes=source.scan_count(account_id=account),
        edges=e_ours, searches=check.searched, agreed=check.found, top5_overlap=f"{overlap:.2f}",
        node_found=f"{recall:.2f}", rank_corr=f"{tau:.2f}" if check.taus else "none", ranked=len(check.taus),
        same_sets=f"{same:.2f}/{len(check.same)}", threshold=OVERLAP_MIN, rank_threshold=RANK_MIN,
        mismatches=len(problems), **fix)
    return problems



class _Searches:
    """The sampled searches run on both sides: what each agreed on, and the full-text figures."""

    def __init__(self, source: Any, store: Any, account: str) -> None:
        self.source, self.store, self.account = source, store, account
        self.guards = Principal.owner(account).guards
        self.searched = self.found = 0
        self.overlaps: list[float] = []
        self.kept: list[float] = []
        self.taus: list[float] = []
        self.same: list[float] = []

    def fulltext(self, node: Any) -> None:
        """A node's first four words searched on both sides, analysed alike."""
        words = text_of(node.properties).split()[:4]
        if not words:
            return
        query = " ".join(words)
        hits_here = self.source.fulltext_search(query, 2 * TOP, guards=self.guards, stemmed=True)
        hits_there = self.store.fulltext_search(query, 2 * TOP, guards=self.guards, stemmed=True)
        here, there = by_score(hits_here)[:TOP], by_score(hits_there)[:TOP]
        self.searched += 1
        overlap = top_overlap(here, there, scores=self._scores(hits_there))
        whole = len(hits_here) < TOP and len(hits_there) < TOP  # both sets whole: compared as sets, below
        ranked = None if whole else ranked_pairs(here, there, self._scores(hits_here), self._scores(hits_there))
        self.overlaps.append(overlap)
        if ranked is not None:
            self.taus.append(ranked)
        if len(here) < TOP and len(there) < TOP:  # both returned their whole result set
            self.same.append(float(set(here) == set(there)))
        elif len(here) < TOP or len(there) < TOP:
            self.same.append(0.0)
        if node.id in here:
            self.kept.append(float(node.id in there))
        if overlap < 1.0 or (ranked is not None and ranked < 1.0):
            log("graph-migrate", "rank-differs", account=self.account[:8], query=repr(query[:40]),
                top5_overlap=f"{overlap:.2f}", rank_corr="short" if ranked is None else f"{ranked:.2f}",
                node_found=node.id in there)
        if overlap >= OVERLAP_MIN:
            self.found += 1

    @staticmethod
    def _scores(hits: list[Any]) -> dict[str, float]:
        return {h.node.id: float(h.score) for h in hits}

    def vector(self, node: Any) -> list[str]:
        """A node's stored vector searched on both sides (Neo4j searches the indexed labels only)."""
        indexed = [label for label in node.labels if label in VECTOR_LABELS]
        if not (node.has_embedding and indexed):
            return []
        stored = self.source.export_embeddings([node.id], account_id=self.account).get(node.id)
        if stored is None:
            return []
        vector = [float(v) for v in stored]
        here = self.source.vector_search(vector, 1, guards=self.guards, labels=indexed[:1])
        there = self.store.vector_search(vector, 1, guards=self.guards, labels=indexed[:1])
        self.searched += 1
        if here and (not there or abs(there[0].score - here[0].score) > 1e-3):
            return [f"vector search of {node.id}: best score {here[0].score:.4f} embedded, "
                    f"{there[0].score if there else 'none'} neo4j"]
        self.found += 1
        return []


def top_overlap(here: list[str], there: list[str], k: int = 5, scores: dict[str, float] | None = None) -> float:
    """The share of the first list's top ``k`` that the second's top ``k`` holds (1 when both are empty).
    With the second list's ``scores``, its top ``k`` runs on through the hits tied (:data:`TIE`) with its
    ``k``-th: which of equal scores falls inside the cut is each store's own."""
    a, b = here[:k], there[:k]
    if not a and not b:
        return 1.0
    if scores and len(b) == k:
        b = b + [nid for nid in there[k:] if _tied(scores[nid], scores[b[-1]])]
    return len(set(a) & set(b)) / max(len(a), len(there[:k]))


def by_score(hits: list[Any]) -> list[str]:
    """Hit ids by score, equal scores (to six decimals: each store's own scale) by node id: the
    order a store gives ties is its own, the lists compared are of what each ranks."""
    return [h.node.id for h in sorted(hits, key=lambda h: (-round(h.score, 6), h.node.id))]


def rank_correlation(here: list[str], there: list[str]) -> float:
    """Kendall's tau of the order two lists give the ids both hold (1 when they share fewer than two)."""
    pos = {nid: i for i, nid in enumerate(there)}
    shared = [pos[nid] for nid in here if nid in pos]
    pairs = len(shared) * (len(shared) - 1) // 2
    if not pairs:
        return 1.0
    concordant = sum(1 for i, a in enumerate(shared) for b in shared[i + 1:] if a < b)
    return (2 * concordant - pairs) / pairs


def ranked_pairs(here: list[str], there: list[str], score_here: dict[str, float],
                 score_there: dict[str, float]) -> float | None:
    """Kendall's tau over the pairs of shared ids that neither side ties (:data:`TIE`), or None when
    the lists are too short to rank (:data:`RANK_SHARED`: fewer shared ids or untied pairs)."""
    shared = [nid for nid in here if nid in set(there)]
    if len(shared) < RANK_SHARED:
        return None
    concordant = discordant = 0
    for i, a in enumerate(shared):
        for b in shared[i + 1:]:
            d_here, d_there = score_here[a] - score_here[b], score_there[a] - score_there[b]
            if _tied(score_here[a], score_here[b]) or _tied(score_there[a], score_there[b]):
                continue
            if d_here * d_there > 0:
                concordant += 1
            else:
                discordant += 1
    pairs = concordant + discordant
    return (concordant - discordant) / pairs if pairs >= RANK_SHARED else None


def _tied(a: float, b: float) -> bool:
    return abs(a - b) <= TIE * max(abs(a), abs(b))


def _sample(source: Any, account: str, size: int) -> list[Any]:
    """Up to ``size`` live nodes spread over the account (every n-th by id)."""
    total = source.scan_count(account_id=account)
    step = max(1, total // max(1, size))
    out: list[Any] = []
    after, seen = "", 0
    while len(out) < size:
        page = source.scan_nodes(account_id=account, after=after, limit=1000)
        if not page:
            break
        for node in page:
            if seen % step == 0 and not node.deleted and len(out) < size:
                out.append(node)
            seen += 1
        after = page[-1].id
    return out
