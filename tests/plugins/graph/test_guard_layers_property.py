"""Property test of the five guard layers (docs/guards.md#guard-layers) on every backend (embedded; Neo4j in CI).

Hypothesis builds random graphs over several accounts, scopes, agent tags and soft-deleted
nodes, then runs random vector, BM25, keyword-tag and expansion queries with random guards.
Every returned row must pass every layer (checked against an independent Python model of the
graph), and top-k queries must return exactly min(k, eligible) rows: the guards run before the
cut. The totals are printed at the end of the run (``-s``) and asserted to be non-trivial; on
Neo4j a full run makes at least 1,000 queries (``GUARD_EXAMPLES_NEO4J`` graphs, default 60, of
17-24 queries each: the floor is drawn, not hoped for; set it higher for a longer hunt).

On Neo4j every example gets fresh account ids (one shared database) and its vectors are padded
to the index dimensions, so the vector-index path is the one exercised; ``vector-candidates``
narrows the store's first window to k and disables the exact shortcut, so the widening path
runs too.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plughost import Principal
from plughost.plugins.graph.sqlite_store import SqliteStore
from plughost.ports.graph import Guards
from tests.backends import BACKENDS, neo4j_env

ACCOUNTS = ("acct-a", "acct-b", "acct-c")
SCOPES = (None, "public", "shared", "admin")
AGENT_TAGS = (None, [], ["bot"], ["other"], ["bot", "other"])
LABELS = ("Question", "Service", "Chunk", "Person", "KnowledgeDocument", "Section")
WORDS = ("alpha", "beta", "gamma", "delta", "w5", "inv")
KEYWORDS = ("faq", "promo", "vip")
DIMS = 4
NEO4J_DIMS = 384
STATS = {b: {"graphs": 0, "queries": 0, "rows": 0, "vector": 0, "vector-candidates": 0, "bm25": 0, "keyword": 0,
             "expand": 0} for b in ("sqlite", "neo4j")}
EXAMPLES = {"sqlite": int(os.environ.get("GUARD_EXAMPLES", "150")),
            "neo4j": int(os.environ.get("GUARD_EXAMPLES_NEO4J", "60"))}
QUERIES_PER_GRAPH = {"sqlite": (4, 16), "neo4j": (17, 24)}
"""On Neo4j a graph costs a few transactions and queries are cheap: more queries per graph."""
_DRIVER: dict[str, object] = {}


@dataclass
class Spec:
    account: str
    labels: list[str]
    scope: str | None
    agents: list[str] | None
    deleted: bool
    words: list[str]
    keywords: list[str]
    vector: list[float] | None

    def __post_init__(self) -> None:
        self.explicit_delete = self.deleted


@dataclass
class Graph:
    nodes: list[Spec]
    edges: list[tuple[int, int, str]] = field(default_factory=list)


node_spec = st.builds(
    Spec,
    account=st.sampled_from(ACCOUNTS[:1] * 3 + ACCOUNTS[1:]),
    labels=st.lists(st.sampled_from(LABELS), min_size=1, max_size=2, unique=True),
    scope=st.sampled_from(SCOPES),
    agents=st.sampled_from((None, None) + AGENT_TAGS[1:] + (['bot'],)),
    deleted=st.sampled_from([False, False, False, True]),
    words=st.lists(st.sampled_from(WORDS), min_size=0, max_size=3),
    keywords=st.lists(st.sampled_from(KEYWORDS), max_size=2, unique=True),
    vector=st.one_of(st.none(), st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=DIMS, max_size=DIMS)),
)


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    nodes = draw(st.lists(node_spec, min_size=3, max_size=30))
    n = len(nodes)
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from(["A", "B"])),
                          max_size=60))
    edges = list({(s, t, k) for s, t, k in pairs if s != t and nodes[s].account == nodes[t].account})
    return Graph(nodes, edges)


guards_st = st.builds(
    Guards,
    account_id=st.sampled_from(ACCOUNTS[:1] * 4 + ACCOUNTS[1:]),
    allowed_scopes=st.one_of(st.none(), st.none(), st.lists(st.sampled_from(["public", "shared", "admin"]), max_size=2,
                                                 unique=True).map(tuple)),
    agent_slug=st.sampled_from([None, None, None, "bot", "bot", "other", "ghost"]),
)

query_st = st.one_of(
    st.tuples(st.sampled_from(["vector", "vector-candidates"]),
              st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=DIMS, max_size=DIMS),
              st.integers(1, 12), st.one_of(st.none(), st.lists(st.sampled_from(LABELS), min_size=1, max_size=2))),
    st.tuples(st.just("bm25"), st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join),
              st.integers(1, 12), st.one_of(st.none(), st.lists(st.sampled_from(LABELS), min_size=1, max_size=2))),
    st.tuples(st.just("keyword"), st.sampled_from(KEYWORDS + ("FAQ", "none")), st.integers(1, 12), st.none()),
    st.tuples(st.just("expand"), st.integers(0, 29), st.integers(1, 20), st.none()),
)


def cascade(graph: Graph) -> None:
    """The model of soft delete: KnowledgeDocument → Section → Chunk along outgoing edges."""
    out: dict[int, list[int]] = {}
    for s, t, _ in graph.edges:
        out.setdefault(s, []).append(t)
    for i, spec in enumerate(list(graph.nodes)):
        if not spec.explicit_delete:
            continue
        level = 0 if "KnowledgeDocument" in spec.labels else 1 if "Section" in spec.labels else None
        frontier = [(i, level)] if level is not None else []
        while frontier:
            node, lvl = frontier.pop()
            for child in out.get(node, []):
                want = "Section" if lvl == 0 else "Chunk"
                if lvl < 2 and want in graph.nodes[child].labels:
                    graph.nodes[child].deleted = True
                    frontier.append((child, lvl + 1))


def primary_ok(spec: Spec, g: Guards) -> bool:
    """Layers 1, 2, 3, 5 on a primary result."""
    return (spec.account == g.account_id and not spec.deleted
            and (g.allowed_scopes is None or spec.scope is None or spec.scope in g.allowed_scopes)
            and (g.agent_slug is None or (spec.agents is not None and g.agent_slug in spec.agents)))


def related_ok(spec: Spec, g: Guards) -> bool:
    """Layer 4 (plus account and soft delete) on an expanded neighbour."""
    return (spec.account == g.account_id and not spec.deleted
            and (g.allowed_scopes is None or spec.scope is None or spec.scope in g.allowed_scopes)
            and (g.agent_slug is None or spec.agents is None or g.agent_slug in spec.agents))


def label_ok(spec: Spec, labels: list[str] | None) -> bool:
    return not labels or bool(set(spec.labels) & set(labels))


@contextmanager
def open_stores(backend: str):
    """One store per account (fresh account names on Neo4j) and the vector padding to use."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as tmp:
            path = Path(tmp) / "graph.sqlite"
            stores = {a: SqliteStore(path, env={"ACCOUNT_ID": a}) for a in ACCOUNTS}
            try:
                yield stores, {a: a for a in ACCOUNTS}, 0
            finally:
                for s in stores.values():
                    s.close()
        return
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    if "neo4j" not in _DRIVER:
        first = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": "probe"})  # applies the schema once
        _DRIVER["neo4j"] = first.driver
    tag = uuid.uuid4().hex[:8]
    names = {a: f"{a}-{tag}" for a in ACCOUNTS}
    stores = {a: Neo4jStore(_DRIVER["neo4j"], env={**neo4j_env(), "ACCOUNT_ID": names[a]}, apply_schema=False)
              for a in ACCOUNTS}
    try:
        yield stores, names, NEO4J_DIMS - DIMS
    finally:
        stores[ACCOUNTS[0]].write(lambda tx: tx.run("MATCH (n:GraphNode) WHERE n.accountId IN $names DETACH DELETE n",
                                                    names=list(names.values())).consume())


def run_example(backend: str, graph: Graph, queries) -> None:
    stats = STATS[backend]
    graph = Graph([dataclasses.replace(spec) for spec in graph.nodes], graph.edges)  # never mutate drawn data
    with open_stores(backend) as (stores, names, pad):
        ids = [f"n{i}" for i in range(len(graph.nodes))]
        for acct, store in stores.items():  # one upsert_many (one transaction) per account, edges included
            rows = []
            for i, spec in enumerate(graph.nodes):
                if spec.account != acct:
                    continue
                props = {"name": " ".join(spec.words), "keywords": spec.keywords}
                if spec.scope is not None:
                    props["scope"] = spec.scope
                if spec.agents is not None:
                    props["agents"] = spec.agents
                rows.append({"id": ids[i], "labels": spec.labels, "properties": props,
                             "embedding": spec.vector + [0.0] * pad if spec.vector is not None else None,
                             "edges": [{"type": kind, "to": ids[t]} for s, t, kind in graph.edges if s == i]})
            # targets first: an edge's target must exist (in the store or earlier in the batch)
            rows.sort(key=lambda r: bool(r["edges"]))
            if rows:
                store.upsert_many(rows, guards=Principal.system(names[acct]).guards)
        for i, spec in enumerate(graph.nodes):
            if spec.explicit_delete:
                stores[spec.account].soft_delete(ids[i], guards=Guards(names[spec.account]))
        cascade(graph)
        by_id = {ids[i]: spec for i, spec in enumerate(graph.nodes)}
        store = stores[ACCOUNTS[0]]
        for g0, (kind, arg, k, labels) in queries:
            g = dataclasses.replace(g0, account_id=names[g0.account_id])
            stats["queries"] += 1
            stats[kind] += 1
            if kind == "expand":
                origin = arg % len(graph.nodes)
                result = store.expand([ids[origin]], guards=g, limit=k)[ids[origin]]
                ospec = graph.nodes[origin]
                eligible = 0
                if ospec.account == g0.account_id and not ospec.deleted:
                    for s, t, _ in graph.edges:
                        if origin in (s, t):
                            eligible += related_ok(graph.nodes[t if s == origin else s], g0)
                for n in result:
                    assert related_ok(by_id[n.node.id], g0), (n.node.id, g0)
                assert len(result) == min(k, eligible)
                stats["rows"] += len(result)
                continue
            if kind.startswith("vector"):  # both paths: score-ordered window, full candidate set
                narrow = kind == "vector-candidates"
                if backend == "sqlite":
                    store.vector_window_max = 0 if narrow else 4096
                else:
                    store.min_fetch, store.overfetch, store.exact_max = (1, 1, 0) if narrow else (100, 10, 20000)
                norm = math.sqrt(sum(x * x for x in arg))
                hits = store.vector_search(arg + [0.0] * pad, k, guards=g, labels=labels)
                eligible = sum(1 for s in graph.nodes if s.vector is not None and primary_ok(s, g0)
                               and label_ok(s, labels)) if norm > 0 else 0
            elif kind == "bm25":
                hits = store.fulltext_search(arg, k, guards=g, labels=labels)
                terms = set(arg.split())
                eligible = sum(1 for s in graph.nodes if terms & set(s.words) and primary_ok(s, g0)
                               and label_ok(s, labels))
            else:
                hits = store.keyword_search(arg, k, guards=g)
                eligible = sum(1 for s in graph.nodes if arg.lower() in s.keywords and primary_ok(s, g0))
            for h in hits:
                spec = by_id[h.node.id]
                assert primary_ok(spec, g0), (kind, h.node.id, spec, g0)
                assert label_ok(spec, labels)
                assert h.node.account_id == g.account_id
            assert len({h.node.id for h in hits}) == len(hits)
            assert len(hits) == min(k, eligible), (kind, arg, k, eligible, [h.node.id for h in hits])
            stats["rows"] += len(hits)
    stats["graphs"] += 1


def property_test(backend: str):
    low, high = QUERIES_PER_GRAPH[backend]

    @settings(max_examples=EXAMPLES[backend], deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(graph=graphs(), queries=st.lists(st.tuples(guards_st, query_st), min_size=low, max_size=high))
    def check(graph: Graph, queries) -> None:
        run_example(backend, graph, queries)

    return check


@pytest.mark.timeout(1200)  # a loaded machine slows the Neo4j round trips; CI's is not shared
@pytest.mark.xdist_group("neo4j")  # with the report below, on one worker
@pytest.mark.parametrize("backend", BACKENDS)
def test_no_row_violates_a_guard_layer_and_top_k_is_full(backend: str) -> None:
    property_test(backend)()


@pytest.mark.xdist_group("neo4j")  # the property test's worker: it reports that run's counts
def test_zz_report_property_run_size() -> None:
    """Runs after the property test (file order): say how much it exercised, per backend."""
    for backend, st_ in STATS.items():
        if st_["graphs"] == 0:
            continue
        print(f"\nguard-layer property test backend={backend}: graphs={st_['graphs']} queries={st_['queries']} "
              f"rows={st_['rows']} vector={st_['vector']}+{st_['vector-candidates']} bm25={st_['bm25']} "
              f"keyword={st_['keyword']} expand={st_['expand']} violations=0")
        assert st_["queries"] >= st_["graphs"]
        if backend == "neo4j" and EXAMPLES["neo4j"] >= 60:
            assert st_["queries"] >= 1000, st_  # 60 graphs of at least 17 queries each
