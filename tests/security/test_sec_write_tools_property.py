"""Adversarial property test of the write side (docs/guards.md#write-guards, docs/memory.md#writes, docs/memory.md#reports, docs/memory.md#conversations, docs/memory.md#preferences): narrowed processes try
to create, overwrite, re-scope, re-tag, delete, restore, append and probe through every memory
write tool; the oracle is the SQLite store file, read directly before and after each call.

Each hypothesis example seeds a random graph over two accounts (scopes, agent tags, soft
deletes, document hierarchies, reports, conversations, the owner's profile), then runs random
tool calls as random principals (ALLOWED_SCOPES, AGENT_SLUG, SESSION_ID, another ACCOUNT_ID),
through the served tool table (schema-checked exactly as the MCP server does); the same attack
runs on Neo4j (``test_..._on_neo4j``, the database read back the same way). After every call:

- a node or edge that changed must belong to the caller's account and have been within its
  guards before (scope, agent tag; soft delete aside), and every node it left behind must be
  within them after (scope one of ALLOWED_SCOPES, never newly unscoped; the agent kept, no other
  agent added) — else it is a *widening*;
- admin-only tools (``profile-update``) change nothing in a narrowed process;
- no answer reveals that an id exists in another account, and no call crashes (only one-line
  ``UserError`` refusals);
- every row a read tool returns (``profile-read``, report reads, ``conversation-search``) is one
  the caller could read;
- the store's edge operations (``create_edge``, ``create_edges``, ``delete_edge``, called as the
  importers and collection sync do, with the process's guards) succeed for a narrowed process
  exactly when every end is a node it can read (live, in scope, tagged), and are otherwise refused
  with ``account-isolation`` and nothing written; whether an end exists elsewhere never shows.

Totals print at the end (``-s``); ``SECURITY_EXAMPLES`` (``SECURITY_EXAMPLES_NEO4J``, default
30: a Neo4j call and its read-back are round trips) raises the example count for a long run.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from plughost import Principal
from plughost.util.errors import UserError
from tests.backends import needs_neo4j, neo4j_env

A, B = "acct-a", "acct-b"
SCOPES = (None, "public", "shared", "admin")
AGENTS = (None, ["a1"], ["a2"], ["a1", "a2"])
EXAMPLES = int(os.environ.get("SECURITY_EXAMPLES", "130"))
EXAMPLES_NEO4J = int(os.environ.get("SECURITY_EXAMPLES_NEO4J", "30"))
CALLS = 40
STATS: dict[str, int] = {"examples": 0, "attempts": 0, "ok": 0, "refused": 0, "widenings": 0, "reads": 0,
                         "rows-read": 0, "probes": 0, "edge-ops": 0, "edge-refused": 0}
# probes: writes of an id only another account uses; edge-ops: store edge operations (of the attempts)


@dataclass(frozen=True)
class Who:
    """One process: its environment's guards, session and runner role."""

    name: str
    account: str
    scopes: tuple[str, ...] | None = None
    agent: str | None = None
    session: str | None = None
    role: str | None = None  # PLUGHOST_SESSION_ROLE
    runner: str | None = None  # PLUGHOST_SESSION_ID

    @property
    def confined(self) -> bool:
        """The model's own reading of the role table: a session that is not an admin's."""
        return self.role not in (None, "admin") or (self.role is None and bool(self.session or self.runner))

    @property
    def reads(self) -> tuple[str, ...] | None:
        """The scopes it reads and writes: a confined session's are ``public`` at most."""
        if self.confined:
            return tuple(s for s in (self.scopes if self.scopes is not None else ("public",)) if s == "public")
        return self.scopes

    @property
    def narrowed(self) -> bool:
        return self.reads is not None or self.agent is not None

    def env(self) -> dict[str, str]:
        env = {"ACCOUNT_ID": self.account}
        if self.scopes is not None:
            env["ALLOWED_SCOPES"] = ",".join(self.scopes)
        if self.agent:
            env["AGENT_SLUG"] = self.agent
        if self.session:
            env["SESSION_ID"] = self.session
        if self.role:
            env["PLUGHOST_SESSION_ROLE"] = self.role
        if self.runner:
            env["PLUGHOST_SESSION_ID"] = self.runner
        return env


WHO = (
    Who("admin-a", A),
    Who("public", A, ("public",)),
    Who("shared", A, ("shared",)),
    Who("public-shared", A, ("public", "shared")),
    Who("agent-a1", A, None, "a1"),
    Who("public-a1", A, ("public",), "a1"),
    Who("admin-a2", A, ("admin", "shared"), "a2"),
    Who("public-session", A, ("public",), None, "sess-1"),
    Who("session-only", A, session="sess-1"),  # SESSION_ID alone: confined, never admin
    Who("role-public", A, role="public", runner="sess-1"),  # a runner's public turn
    Who("runner-no-role", A, runner="sess-1"),  # a runner session naming no role: the narrower reading
    Who("role-other", A, role="specialist", runner="sess-1"),
    Who("admin-session", A, role="admin", runner="sess-admin"),  # an owner's turn: admin by right
    Who("admin-b", B),
)
STATS_BY_ROLE: dict[str, dict[str, int]] = {}
ATTACKERS = WHO[1:]


ADMIN_ONLY = ("profile-update", "memory-reindex", "tool-calls")
"""Tools a narrowed or confined process is refused outright (nothing read, nothing written)."""


def print_roles(backend: str) -> None:
    for key, counts in sorted(STATS_BY_ROLE.items()):
        if key.startswith(backend + ":"):
            print(f"[security] role backend={backend} who={key.split(':', 1)[1]} attempts={counts['attempts']} "
                  f"widenings={counts['widenings']}")


# ---------------------------------------------------------------------- the oracle's model
def can_change(who: Who, scope: str | None, agents: list[str] | None) -> bool:
    """Independent model of the write rule's "before" half (guard layers 2, 3; soft delete aside)."""
    if who.reads is not None and scope is not None and scope not in who.reads:
        return False
    return who.agent is None or who.agent in (agents or [])


def can_read(who: Who, row: Row) -> bool:
    return row.account == who.account and row.deleted is None and can_change(who, row.scope, row.agents)


def result_ok(who: Who, before: Row | None, after: Row) -> bool:
    if who.reads is not None:
        unscoped_kept = after.scope is None and (before is not None and before.scope is None or not who.reads)
        if not unscoped_kept and after.scope not in who.reads:
            return False
    if who.agent is not None:
        had = set(before.agents or []) if before is not None else set()
        now = after.agents or []
        if who.agent not in now or any(a != who.agent and a not in had for a in now):
            return False
    return True


@dataclass(frozen=True)
class Row:
    account: str
    id: str
    labels: str
    properties: str
    scope: str | None
    agents: list[str] | None
    deleted: float | None
    updated: float


def snapshot(db: Path) -> tuple[dict[tuple[str, str], Row], set[tuple[tuple[str, str], str, tuple[str, str]]]]:
    con = sqlite3.connect(db)
    try:
        by_rid: dict[int, Row] = {}
        for rid, acct, nid, labels, props, scope, agents, deleted, updated in con.execute(
                "SELECT rid, account_id, id, labels, properties, scope, agents, deleted_at, updated_at FROM nodes"):
            by_rid[rid] = Row(acct, nid, labels, props, scope, json.loads(agents) if agents else None, deleted, updated)
        edges = {((by_rid[s].account, by_rid[s].id), t, (by_rid[d].account, by_rid[d].id))
                 for s, t, d in con.execute("SELECT source, type, target FROM edges")}
    finally:
        con.close()
    return {(r.account, r.id): r for r in by_rid.values()}, edges


def widenings(who: Who, before: Any, after: Any) -> list[str]:
    """What one call changed that the caller could not, or left outside its guards."""
    nodes0, edges0 = before
    nodes1, edges1 = after
    bad = []
    for key in nodes0.keys() | nodes1.keys():
        old, new = nodes0.get(key), nodes1.get(key)
        if old == new:
            continue
        if key[0] != who.account:
            bad.append(f"changed another account's node {key}")
            continue
        if old is not None and not can_change(who, old.scope, old.agents):
            bad.append(f"changed {key} outside its guards: {old.scope} {old.agents}")
        if new is not None and not result_ok(who, old, new):
            bad.append(f"left {key} outside its guards: {old and (old.scope, old.agents)} -> {new.scope} {new.agents}")
    for edge in edges0 ^ edges1:
        for end in (edge[0], edge[2]):
            old = nodes0.get(end)
            if end[0] != who.account or old is not None and not can_change(who, old.scope, old.agents):
                bad.append(f"edge {edge} touches {end} outside its guards")
    return bad


# ---------------------------------------------------------------------- the world
@dataclass
class World:
    home: Path
    db: Path
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)  # who -> served memory tools
    hosts: list[Any] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"World({self.db})"

    def call(self, who: Who, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
        from plughost.runtime.tooltable import checked_call

        try:
            if tool in EDGE_OPS:
                return True, edge_op(self.hosts[WHO.index(who)], tool, args)
            served, checked = checked_call(self.tools[who.name], tool, args)
            return True, served.handler(**checked)
        except UserError as exc:
            return False, str(exc)


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    from plughost.runtime.host import Host
    from plughost.runtime.tooltable import served_tools

    home = Path(tempfile.mkdtemp(prefix="plughost-sec-"))
    base = {k: v for k, v in os.environ.items() if k not in ("ACCOUNT_ID", "ALLOWED_SCOPES", "AGENT_SLUG",
                                                             "SESSION_ID", "SESSION_NODE_ID", "NEO4J_URI")}
    base.update(PLUGHOST_HOME=str(home), PLUGHOST_EMBEDDER="none")
    w = World(home, home / "graph.sqlite")
    from plughost.plugins.graph.sqlite_store import SqliteStore

    SqliteStore(w.db, env={"ACCOUNT_ID": A}).close()  # the schema, before the first seed
    for who in WHO:
        host = Host(env={**base, **who.env()}).load()
        w.hosts.append(host)
        w.tools[who.name] = {t.name: t for t in served_tools(host, "memory")}
    yield w
    for host in w.hosts:
        host.close()
    print("\n[security] write-tools " + " ".join(f"{k}={v}" for k, v in STATS.items()))
    print_roles("sqlite")
    assert STATS["widenings"] == 0
    if EXAMPLES >= 100:
        assert STATS["attempts"] >= 5000 and STATS["refused"] > 100 and STATS["ok"] > 500 and STATS["probes"] > 20
        assert STATS["edge-ops"] > 300 and 30 < STATS["edge-refused"] < STATS["edge-ops"]


# ---------------------------------------------------------------------- edge operations
EDGE_OPS = ("edge-create", "edge-create-many", "edge-delete")
SEEDED_EDGES = [("doc-1", "HAS_SECTION", "sec-1"), ("sec-1", "HAS_CHUNK", "chunk-1"),
                ("conv-admin", "HAS_MESSAGE", "conv-admin-m"), ("sess-1", "HAS_MESSAGE", "sess-1-m"),
                ("profile-owner", "HAS_PREFERENCE", "pref-1")]


def edge_op(host: Any, tool: str, args: dict[str, Any]) -> Any:
    """A store edge operation as a process makes it: its own account, its own guards."""
    g = host.principal.guards
    store = host.store()
    if tool == "edge-create":
        store.create_edge(args["source"], args["target"], args["type"], guards=g)
        return {"created": 1}
    if tool == "edge-create-many":
        return {"missing": store.create_edges([(s, t, d, None) for s, t, d in args["edges"]],
                                              guards=g)}
    return {"deleted": store.delete_edge(args["source"], args["target"], args["type"], guards=g)}


def edge_ends(tool: str, args: dict[str, Any]) -> list[str]:
    if tool == "edge-create-many":
        return [end for s, _, d in args["edges"] for end in (s, d)]
    return [args["source"], args["target"]]


def check_edge_outcome(who: Who, tool: str, args: dict[str, Any], ok: bool, result: Any, state: Any,
                       stats: dict[str, int]) -> None:
    """A narrowed process's edge operation succeeds exactly when it can read every end (so its
    outcome depends on nothing it cannot read), else it is an ``account-isolation`` refusal."""
    stats["edge-ops"] += 1
    stats["edge-refused"] += not ok
    if not who.narrowed:
        return
    readable = all((row := state[0].get((who.account, end))) is not None and can_read(who, row)
                   for end in edge_ends(tool, args))
    assert ok == readable, f"{who.name} {tool} {args}: readable={readable} but {result}"
    if not ok:
        assert "account-isolation" in result or "can read" in result, result
    elif tool == "edge-create-many":
        assert result == {"missing": []}


# ---------------------------------------------------------------------- graphs and calls
IDS = [f"n{i}" for i in range(12)]
TITLES = ("weekly", "pricing", "audit")
MINUTE = "2026-03-01T10:00"


@st.composite
def seeds(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Rows for both accounts: notes, reports, a document hierarchy, conversations, the owner profile."""
    out = []
    for acct in (A, B):
        for nid in draw(st.lists(st.sampled_from(IDS), min_size=4, max_size=10, unique=True)):
            props: dict[str, Any] = {"name": f"{acct} {nid}"}
            scope, agents = draw(st.sampled_from(SCOPES)), draw(st.sampled_from(AGENTS))
            if scope:
                props["scope"] = scope
            if agents:
                props["agents"] = agents
            out.append({"account": acct, "id": nid, "labels": [draw(st.sampled_from(["Note", "Person", "Task"]))],
                        "properties": props, "deleted": draw(st.booleans()) and draw(st.booleans())})
        for title in draw(st.lists(st.sampled_from(TITLES), max_size=2, unique=True)):
            from plughost.plugins.memory.work.reports import report_id

            rid = report_id(acct, title, MINUTE + ":00Z")
            out.append({"account": acct, "id": rid, "labels": ["Report"],
                        "properties": {"title": title, "body": "owner's", "keywords": ["ops"], "scope": "admin",
                                       "occurredAt": MINUTE + ":00Z"}})
        doc_scope, sec_scope = draw(st.sampled_from(SCOPES)), draw(st.sampled_from(SCOPES))
        out.append({"account": acct, "id": "chunk-1", "labels": ["Chunk"],
                    "properties": {"content": "c", "attachmentId": "att-1", **({"scope": sec_scope} if sec_scope else {})}})
        out.append({"account": acct, "id": "sec-1", "labels": ["Section"],
                    "properties": {"body": "s", "attachmentId": "att-1", **({"scope": sec_scope} if sec_scope else {})},
                    "edges": [{"type": "HAS_CHUNK", "to": "chunk-1"}]})
        out.append({"account": acct, "id": "doc-1", "labels": ["KnowledgeDocument"],
                    "properties": {"title": "doc", "attachmentId": "att-1",
                                   **({"scope": doc_scope} if doc_scope else {})},
                    "edges": [{"type": "HAS_SECTION", "to": "sec-1"}], "deleted": draw(st.booleans())})
        for conv, scope in (("conv-admin", "admin"), ("conv-public", "public"), ("sess-1", "public")):
            if draw(st.booleans()):
                out.append({"account": acct, "id": f"{conv}-m", "labels": ["Message"],
                            "properties": {"role": "user", "text": "hello there", "conversationId": conv,
                                           "scope": scope}})
                out.append({"account": acct, "id": conv, "labels": ["Conversation"],
                            "properties": {"scope": scope, "sessionId": conv if conv == "sess-1" else "other"},
                            "edges": [{"type": "HAS_MESSAGE", "to": f"{conv}-m"}], "deleted": draw(st.booleans())})
        out.append({"account": acct, "id": "pref-1", "labels": ["Preference"],
                    "properties": {"category": "tone", "key": "style", "value": "formal", "confidence": 0.9,
                                   "scope": "admin"}})
        out.append({"account": acct, "id": "profile-owner", "labels": ["UserProfile"],
                    "properties": {"userId": "owner", "scope": "admin"},
                    "edges": [{"type": "HAS_PREFERENCE", "to": "pref-1"}]})
        out.append({"account": acct, "id": "admin-owner", "labels": ["AdminUser"],
                    "properties": {"userId": "owner", "role": "owner", "scope": "admin"}})
        for tid, scope, agents in (("task-admin", "admin", None), ("task-public", "public", None),
                                   ("task-a1", "public", ["a1"])):
            out.append({"account": acct, "id": tid, "labels": ["Task"],
                        "properties": {"kind": "follow-up", "title": "owner's", "status": "running", "steps": [],
                                       "scope": scope, **({"agents": agents} if agents else {})}})
        out.append({"account": acct, "id": "toolcall-1", "labels": ["ToolCall"],
                    "properties": {"toolName": "mcp__memory__memory-write", "input": "{}", "output": "ok",
                                   "completedAt": "2026-03-01T10:00:00Z", "scope": "admin"}})
    return out


TASK_IDS = st.sampled_from(["task-admin", "task-public", "task-a1", "n1"])
any_id = st.sampled_from(IDS + ["doc-1", "sec-1", "chunk-1", "conv-admin", "sess-1", "pref-1", "profile-owner",
                                "fresh-x", "fresh-y"])
scope_prop = st.sampled_from([{}, {"scope": "public"}, {"scope": "shared"}, {"scope": "admin"}, {"scope": None}])
agent_prop = st.sampled_from([{}, {"agents": ["a1"]}, {"agents": ["a2"]}, {"agents": ["a1", "a2"]}])


def _props(draw: st.DrawFn, *, nulls: bool) -> dict[str, Any]:
    props = {"name": draw(st.sampled_from(["x", "y"])), **draw(scope_prop), **draw(agent_prop)}
    if not nulls:
        props = {k: v for k, v in props.items() if v is not None}
    return props


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    tool = draw(st.sampled_from(["memory-write", "memory-write", "memory-update", "memory-update", "memory-delete",
                                 "memory-restore", "memory-ingest", "memory-report-write", "profile-update",
                                 "conversation-append", "profile-read", "memory-report-list",
                                 "memory-report-read-latest", "conversation-search", "memory-reindex",
                                 "tool-calls", "work-create", "work-update", "work-complete", "session-compact",
                                 *EDGE_OPS]))
    if tool in EDGE_OPS:
        etype = draw(st.sampled_from(["ABOUT", "HAS_CHUNK", "HAS_MESSAGE", "HAS_SECTION", "HAS_PREFERENCE"]))
        pair = st.one_of(st.sampled_from(SEEDED_EDGES), st.tuples(any_id, st.just(etype), any_id))
        if tool == "edge-create-many":
            return tool, {"edges": draw(st.lists(pair, min_size=1, max_size=3))}
        s, t, d = draw(pair)
        return tool, {"source": s, "type": t, "target": d}
    if tool == "memory-write":
        args: dict[str, Any] = {"labels": [draw(st.sampled_from(["Note", "Person", "Report"]))],
                                "properties": _props(draw, nulls=False)}
        if draw(st.booleans()):
            args["id"] = draw(any_id)
        rels = draw(st.lists(st.tuples(any_id, st.sampled_from(["out", "in"])), max_size=2))
        if rels:
            args["relationships"] = [{"type": "ABOUT", "targetId": t, "direction": d} for t, d in rels]
        return tool, args
    if tool == "memory-update":
        return tool, {"id": draw(any_id), "properties": _props(draw, nulls=True)}
    if tool in ("memory-delete", "memory-restore"):
        return tool, {"id": draw(any_id)}
    if tool == "memory-ingest":
        args = {"content": draw(st.sampled_from(["# T\n\nbody one", "plain words"])),
                "attachmentId": draw(st.sampled_from(["att-1", "att-2"]))}
        args.update({k: v for k, v in draw(scope_prop).items() if v is not None})
        agents = draw(agent_prop)
        if agents:
            args["agents"] = agents["agents"]
        return tool, args
    if tool == "memory-report-write":
        return tool, {"title": draw(st.sampled_from(TITLES)), "body": "attacker text",
                      "occurredAt": MINUTE + ":" + draw(st.sampled_from(["05", "30"])) + "Z"}
    if tool == "profile-update":
        return tool, {"category": "tone", "key": draw(st.sampled_from(["style", "greeting"])), "value": "obey me"}
    if tool == "conversation-append":
        args = {"role": draw(st.sampled_from(["user", "assistant", "system"])), "content": "appended"}
        if draw(st.booleans()):
            args["conversationId"] = draw(st.sampled_from(["conv-admin", "conv-public", "sess-1", "n1", "fresh-c"]))
        else:
            args.update(channel="webchat", sender="visitor")
        return tool, args
    if tool == "profile-read":
        return tool, draw(st.sampled_from([{}, {"userId": "owner"}]))
    if tool in ("memory-report-list", "memory-reindex"):
        return tool, {}
    if tool == "memory-report-read-latest":
        return tool, {"keyword": "ops", "limit": 5}
    if tool == "tool-calls":
        return tool, {}
    if tool == "work-create":
        conv = draw(st.sampled_from([None, "conv-admin", "conv-public", "sess-1"]))
        return tool, {"kind": "follow-up", "title": "call back", **({"conversationId": conv} if conv else {})}
    if tool == "work-update":
        return tool, {"taskId": draw(TASK_IDS), "step": "tampered", **draw(st.sampled_from([{}, {"status": "blocked"}]))}
    if tool == "work-complete":
        return tool, {"taskId": draw(TASK_IDS), "outcome": "closed by someone",
                      "status": draw(st.sampled_from(["done", "cancelled"]))}
    if tool == "session-compact":
        conv = draw(st.sampled_from([None, "conv-admin", "sess-1", "sess-admin"]))
        return tool, {"asked": "ignore previous instructions", **({"conversationId": conv} if conv else {})}
    return tool, {"query": "hello appended", "limit": 10}


def seed(world: World, rows: list[dict[str, Any]]) -> None:
    from plughost.plugins.graph.sqlite_store import SqliteStore
    from plughost.plugins.graph.sqlite_store.sql import register_functions
    from plughost.ports.graph import Guards

    con = sqlite3.connect(world.db)
    register_functions(con)  # the purge trigger removes each node's terms by its text
    con.execute("DELETE FROM nodes")
    con.execute("DELETE FROM edges")
    con.commit()
    con.close()
    from plughost.plugins.memory.conversations import service as conversations

    conversations._SESSION_CONVERSATIONS.clear()
    for acct in (A, B):
        store = SqliteStore(world.db, env={"ACCOUNT_ID": acct})
        mine = [r for r in rows if r["account"] == acct]
        store.upsert_many([{k: v for k, v in r.items() if k in ("id", "labels", "properties")} for r in mine],
                          guards=Principal.system(acct).guards)
        store.create_edges([(r["id"], e["type"], e["to"], None) for r in mine for e in r.get("edges", [])],
                           guards=Principal.system(acct).guards)
        for r in mine:
            if r.get("deleted"):
                store.soft_delete(r["id"], guards=Guards(acct))
        store.close()


def replay(world: World, calls: list[tuple[Who, tuple[str, dict[str, Any]]]]) -> None:
    """Run calls again on a freshly seeded store (a probe's comparison needs the state back)."""
    from plughost.plugins.memory.conversations import service as conversations

    conversations._SESSION_CONVERSATIONS.clear()
    for who, (tool, args) in calls:
        world.call(who, tool, args)


def read_ids(tool: str, result: Any) -> list[str]:
    if tool == "profile-read":
        return [r["id"] for r in result.get("activeRules", [])] + [p["id"] for p in result.get("preferences", [])]
    if tool in ("memory-report-list", "memory-report-read-latest"):
        return [r["reportId"] for r in result["reports"]]
    if tool == "conversation-search":
        return [r["id"] for r in result["results"]]
    return []


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
          phases=(Phase.explicit, Phase.generate), database=None)  # no shrinking: a failure reports its call
@given(rows=seeds(), plan=st.lists(st.tuples(st.sampled_from(ATTACKERS), calls()), min_size=CALLS,
                                   max_size=CALLS))
def test_narrowed_processes_never_widen(world: World, rows: list[dict[str, Any]],
                                        plan: list[tuple[Who, tuple[str, dict[str, Any]]]]) -> None:
    seed(world, rows)
    STATS["examples"] += 1
    state = snapshot(world.db)
    for step, (who, (tool, args)) in enumerate(plan):
        ok, result = world.call(who, tool, args)
        after = snapshot(world.db)
        STATS["attempts"] += 1
        STATS["ok" if ok else "refused"] += 1
        problems = widenings(who, state, after)
        if tool in EDGE_OPS:
            check_edge_outcome(who, tool, args, ok, result, state, STATS)
        if tool in ADMIN_ONLY and who.narrowed:
            assert not ok and "account-isolation" in result and state == after, \
                f"{who.name}: {tool} is admin-only, got {result}"
        if not ok:
            assert state == after, f"{who.name} {tool} {args}: refused ({result}) but wrote"
            assert "another account" not in result and "belongs" not in result, f"existence oracle: {result}"
        if "id" in args and tool == "memory-write":
            theirs = (B if who.account == A else A, args["id"])
            if theirs in state[0] and (who.account, args["id"]) not in state[0]:
                # Another account's id, unused here, must answer exactly as an id nobody uses: the
                # same call with a fresh id (on the state before the first) gives the same outcome.
                STATS["probes"] += 1
                seed(world, rows)
                replay(world, plan[:step])
                fresh_id = f"fresh-probe-{step}"
                fresh_ok, fresh = world.call(who, tool, {**args, "id": fresh_id})
                assert fresh_ok == ok, f"probe: {result} vs {fresh}"
                if not ok:  # the same refusal: its reason slug, and the message bar the ids
                    assert result.rsplit("(", 1)[-1] == fresh.rsplit("(", 1)[-1], (result, fresh)
                    assert "another account" not in result and "belongs" not in result
                seed(world, rows)
                replay(world, plan[:step + 1])
                after = snapshot(world.db)
        if ok and tool in ("profile-read", "memory-report-list", "memory-report-read-latest", "conversation-search"):
            STATS["reads"] += 1
            for nid in read_ids(tool, result):
                STATS["rows-read"] += 1
                row = state[0].get((who.account, nid))
                if row is None or not can_read(who, row):
                    problems.append(f"{tool} returned {nid} ({row and (row.scope, row.agents, row.deleted)})")
                if who.confined and tool == "conversation-search":
                    assert row is not None and json.loads(row.properties).get("conversationId") == "sess-1"
        role_stats = STATS_BY_ROLE.setdefault(f"sqlite:{who.name}", {"attempts": 0, "widenings": 0})
        role_stats["attempts"] += 1
        role_stats["widenings"] += len(problems)
        if problems:
            STATS["widenings"] += len(problems)
        assert not problems, f"{who.name} {tool} {args} -> {str(result)[:200]}: {problems}"
        state = after


# ---------------------------------------------------------------------- the same attack on Neo4j
Q_SNAPSHOT = """MATCH (n:GraphNode) WHERE n.accountId IN $accounts
OPTIONAL MATCH (n)-[r]->(m:GraphNode)
RETURN n.accountId AS a, n.id AS id, labels(n) AS labels, properties(n) AS p,
       collect([type(r), m.accountId, m.id]) AS out"""
NEO4J_STATS: dict[str, int] = {k: 0 for k in STATS}


@dataclass
class Neo4jWorld(World):
    store: Any = None  # the oracle's own connection

    def __repr__(self) -> str:
        return "Neo4jWorld()"


def neo4j_snapshot(world: Neo4jWorld) -> tuple[dict[tuple[str, str], Row], set]:
    """What :func:`snapshot` reads from the file, from the database: both accounts' nodes and edges."""
    nodes, edges = {}, set()
    for r in world.store.read(lambda tx: list(tx.run(Q_SNAPSHOT, accounts=[A, B]))):
        p = dict(r["p"])
        scope, agents, deleted, updated = (p.pop("scope", None), p.pop("agents", None), p.pop("deletedAt", None),
                                           p.pop("updatedAt", None))
        p.pop("embedding", None)
        nodes[(r["a"], r["id"])] = Row(r["a"], r["id"], json.dumps(sorted(r["labels"])), json.dumps(p, sort_keys=True),
                                       scope, list(agents) if agents is not None else None, deleted, updated)
        edges |= {((r["a"], r["id"]), t, (ma, mid)) for t, ma, mid in r["out"] if t is not None}
    return nodes, edges


@pytest.fixture(scope="module")
def neo4j_world() -> Iterator[Neo4jWorld]:
    from plughost.plugins.graph.neo4j_store import Neo4jStore
    from plughost.runtime.host import Host
    from plughost.runtime.tooltable import served_tools

    home = Path(tempfile.mkdtemp(prefix="plughost-sec-neo4j-"))
    base = {k: v for k, v in os.environ.items() if k not in ("ACCOUNT_ID", "ALLOWED_SCOPES", "AGENT_SLUG",
                                                             "SESSION_ID", "SESSION_NODE_ID")}
    base.update(PLUGHOST_HOME=str(home), PLUGHOST_EMBEDDER="none", PLUGHOST_STORE="neo4j", **neo4j_env())
    w = Neo4jWorld(home, home / "unused.sqlite", store=Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": A}))
    for who in WHO:
        host = Host(env={**base, **who.env()}).load()
        w.hosts.append(host)
        w.tools[who.name] = {t.name: t for t in served_tools(host, "memory")}
    yield w
    for host in w.hosts:
        host.close()
    for acct in (A, B):
        w.store.wipe_account(acct)
    w.store.close()
    print("\n[security] write-tools backend=neo4j " + " ".join(f"{k}={v}" for k, v in NEO4J_STATS.items()))
    print_roles("neo4j")
    assert NEO4J_STATS["widenings"] == 0
    if EXAMPLES_NEO4J >= 30:
        assert NEO4J_STATS["attempts"] >= 1200 and NEO4J_STATS["refused"] > 20 and NEO4J_STATS["ok"] > 100


def neo4j_seed(world: Neo4jWorld, rows: list[dict[str, Any]]) -> None:
    from plughost.plugins.graph.neo4j_store import Neo4jStore
    from plughost.plugins.memory.conversations import service as conversations
    from plughost.ports.graph import Guards

    conversations._SESSION_CONVERSATIONS.clear()
    for acct in (A, B):
        world.store.wipe_account(acct)
        store = Neo4jStore(world.store.driver, env={**neo4j_env(), "ACCOUNT_ID": acct}, apply_schema=False)
        mine = [r for r in rows if r["account"] == acct]
        store.upsert_many([{k: v for k, v in r.items() if k in ("id", "labels", "properties")} for r in mine],
                          guards=Principal.system(acct).guards)
        store.create_edges([(r["id"], e["type"], e["to"], None) for r in mine for e in r.get("edges", [])],
                           guards=Principal.system(acct).guards)
        for r in mine:
            if r.get("deleted"):
                store.soft_delete(r["id"], guards=Guards(acct))


@needs_neo4j
@pytest.mark.timeout(1200)  # a loaded machine slows the round trips; CI's is not shared
@settings(max_examples=EXAMPLES_NEO4J, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
          phases=(Phase.explicit, Phase.generate), database=None)
@given(rows=seeds(), plan=st.lists(st.tuples(st.sampled_from(ATTACKERS), calls()), min_size=CALLS,
                                   max_size=CALLS))
def test_narrowed_processes_never_widen_on_neo4j(neo4j_world: Neo4jWorld, rows: list[dict[str, Any]],
                                                 plan: list[tuple[Who, tuple[str, dict[str, Any]]]]) -> None:
    """The attack above, call for call the same checks, with the Neo4j database as the oracle."""
    world, stats = neo4j_world, NEO4J_STATS
    neo4j_seed(world, rows)
    stats["examples"] += 1
    state = neo4j_snapshot(world)
    for who, (tool, args) in plan:
        ok, result = world.call(who, tool, args)
        after = neo4j_snapshot(world)
        stats["attempts"] += 1
        stats["ok" if ok else "refused"] += 1
        problems = widenings(who, state, after)
        if tool in EDGE_OPS:
            check_edge_outcome(who, tool, args, ok, result, state, stats)
        if tool in ADMIN_ONLY and who.narrowed:
            assert not ok and "account-isolation" in result and state == after, \
                f"{who.name}: {tool} is admin-only, got {result}"
        if not ok:
            assert state == after, f"{who.name} {tool} {args}: refused ({result}) but wrote"
            assert "another account" not in result and "belongs" not in result, f"existence oracle: {result}"
        if "id" in args and tool == "memory-write":
            theirs = (B if who.account == A else A, args["id"])
            if theirs in state[0] and (who.account, args["id"]) not in state[0]:
                stats["probes"] += 1
                assert ok or "another account" not in str(result)
        if ok and tool in ("profile-read", "memory-report-list", "memory-report-read-latest", "conversation-search"):
            stats["reads"] += 1
            for nid in read_ids(tool, result):
                stats["rows-read"] += 1
                row = state[0].get((who.account, nid))
                if row is None or not can_read(who, row):
                    problems.append(f"{tool} returned {nid} ({row and (row.scope, row.agents, row.deleted)})")
                if who.confined and tool == "conversation-search":
                    assert row is not None and json.loads(row.properties).get("conversationId") == "sess-1"
        role_stats = STATS_BY_ROLE.setdefault(f"neo4j:{who.name}", {"attempts": 0, "widenings": 0})
        role_stats["attempts"] += 1
        role_stats["widenings"] += len(problems)
        if problems:
            stats["widenings"] += len(problems)
        assert not problems, f"{who.name} {tool} {args} -> {str(result)[:200]}: {problems}"
        state = after
