"""Write guards are read guards (docs/guards.md#write-guards): every role × every writing tool ×
every conversation target, on each store, with the store itself as the oracle.

A narrowed process (ALLOWED_SCOPES, AGENT_SLUG, a session or public visitor) sees Conversation
and Message nodes only of its own session's conversation (``confined_view``). This suite makes it
try to write into, link to, rewrite, delete and restore other visitors' conversations (webchat,
Telegram, WhatsApp, an admin one) through every tool that writes: ``conversation-append`` (by id,
and by the channel and sender it derives one from), ``memory-write`` (relationships either way,
a Message naming another conversation), ``memory-update`` (a message's text, moving one's own
message into another conversation), ``memory-delete``, ``memory-restore``, ``work-create`` with
``RAISED_DURING``, ``work-update``, ``work-complete``, ``session-compact``, ``memory-report-write``,
``memory-ingest``, ``profile-update``, and the store's edge operations.

A *widening*: after a call, a node or edge changed (created, updated, deleted, restored, linked)
that the writer could not read under its confined view before, or left a node it could not read
after (a Message naming another conversation). Every refusal must be a one-line ``UserError``
naming its reason, and write nothing. Totals print as ``[write-fuzz] attempts=N widened=M backend=..``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plughost import Principal
from plughost.util.errors import UserError
from tests.backends import BACKENDS, neo4j_env
from tests.security.test_sec_write_tools_property import (
    EDGE_OPS,
    Q_SNAPSHOT,
    Row,
    Who,
    can_change,
    edge_op,
    result_ok,
    snapshot,
)

A, B = "acct-a", "acct-b"
OWN = "sess-1"
CONFINED = {"Conversation", "Message", "WebchatMessage", "TelegramMessage", "WhatsAppMessage"}

ROLES = (
    Who("owner", A),
    Who("admin-session", A, role="admin", runner="sess-admin"),
    Who("session", A, session=OWN),
    Who("public", A, role="public", runner=OWN),
    Who("public-no-session", A, role="public"),
    Who("scoped-public", A, ("public",)),
    Who("scoped-shared", A, ("public", "shared")),
    Who("scoped-unscoped", A, ()),
    Who("agent", A, None, "a1"),
    Who("agent-public", A, ("public",), "a1"),
    Who("other-account", B),
)


def conv_id(channel: str, sender: str) -> str:
    from plughost.ports.graph import conversation_node_id

    return conversation_node_id(A, channel, sender)


# the other visitors' conversations: (channel, sender, scope)
VISITORS = (("webchat", "visitor-token-1", "public"), ("telegram", "123456789", "public"),
            ("whatsapp", "+4915112345678", "public"), ("telegram", "987654321", "admin"))
LABEL = {"webchat": "WebchatMessage", "telegram": "TelegramMessage", "whatsapp": "WhatsAppMessage"}


def seed_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for acct in (A, B):
        convs = [(conv_id(ch, sender) if acct == A else f"b-{ch}-{sender}", ch, sender, scope)
                 for ch, sender, scope in VISITORS]
        convs.append((OWN, "webchat", "me", "public"))
        for cid, ch, sender, scope in convs:
            msgs = [f"{cid}-m", f"{cid}-gone"]
            for mid in msgs:
                rows.append({"account": acct, "id": mid, "labels": ["Message", LABEL[ch]],
                             "properties": {"role": "user", "text": "hello, my order", "conversationId": cid,
                                            "channel": ch, "sender": sender, "scope": scope},
                             "deleted": mid.endswith("-gone")})
            rows.append({"account": acct, "id": cid, "labels": ["Conversation"],
                         "properties": {"scope": scope, "channel": ch, "sender": sender,
                                        "sessionId": OWN if cid == OWN else f"s-{sender}"},
                         "edges": [{"type": "HAS_MESSAGE", "to": m} for m in msgs]})
        for nid, scope in (("note-public", "public"), ("note-admin", "admin"), ("note-open", None)):
            rows.append({"account": acct, "id": nid, "labels": ["Note"],
                         "properties": {"name": nid, **({"scope": scope} if scope else {})}})
        rows.append({"account": acct, "id": "task-public", "labels": ["Task"],
                     "properties": {"kind": "k", "title": "t", "status": "running", "steps": [], "scope": "public",
                                    "agents": ["a1"]}})
    return rows


def targets() -> list[tuple[str, str]]:
    """(conversation id, one of its messages) of every conversation a narrowed role must not write."""
    out = [(conv_id(ch, s), conv_id(ch, s) + "-m") for ch, s, _ in VISITORS]
    return out + [(OWN, OWN + "-m")]  # its own, for sessions (the control)


def attempts() -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    for conv, msg in targets():
        gone = conv + "-gone"
        calls += [
            ("conversation-append", {"conversationId": conv, "role": "assistant",
                                     "content": "your order is cancelled, pay at http://evil.example"}),
            ("memory-update", {"id": msg, "properties": {"text": "rewritten"}}),
            ("memory-update", {"id": conv, "properties": {"title": "hijacked"}}),
            ("memory-update", {"id": OWN + "-m", "properties": {"conversationId": conv}}),
            ("memory-update", {"id": "note-public", "properties": {"conversationId": conv, "role": "assistant",
                                                                  "text": "pay here"}, "addLabels": ["Message"]}),
            ("memory-delete", {"id": msg}),
            ("memory-delete", {"id": conv}),
            ("memory-restore", {"id": gone}),
            ("memory-write", {"labels": ["Note"], "properties": {"name": "n", "scope": "public"},
                              "relationships": [{"type": "ABOUT", "targetId": conv}]}),
            ("memory-write", {"labels": ["Note"], "properties": {"name": "n", "scope": "public"},
                              "relationships": [{"type": "HAS_MESSAGE", "targetId": conv, "direction": "in"}]}),
            ("memory-write", {"labels": ["Note"], "properties": {"name": "n", "scope": "public"},
                              "relationships": [{"type": "ABOUT", "targetId": msg}]}),
            ("memory-write", {"labels": ["Message", "WebchatMessage"],
                              "properties": {"role": "assistant", "text": "pay at http://evil.example",
                                             "conversationId": conv, "scope": "public"}}),
            ("work-create", {"kind": "follow-up", "title": "t", "conversationId": conv}),
            ("session-compact", {"asked": "ignore previous instructions", "conversationId": conv}),
            ("edge-create", {"source": "note-public", "type": "ABOUT", "target": conv}),
            ("edge-create", {"source": conv, "type": "HAS_MESSAGE", "target": "note-public"}),
            ("edge-create-many", {"edges": [("note-public", "ABOUT", msg)]}),
            ("edge-delete", {"source": conv, "type": "HAS_MESSAGE", "target": msg}),
        ]
    for ch, sender, _ in VISITORS:  # the id derived from public facts (a chat id, a number)
        calls.append(("conversation-append", {"channel": ch, "sender": sender, "role": "assistant",
                                              "content": "your order is cancelled"}))
    calls += [("work-update", {"taskId": "task-public", "step": "s"}),
              ("work-complete", {"taskId": "task-public", "outcome": "o"}),
              ("memory-report-write", {"title": "weekly", "body": "b", "occurredAt": "2026-03-01T10:00:00Z"}),
              ("memory-ingest", {"content": "# T\n\nbody", "attachmentId": "att-9", "scope": "public"}),
              ("profile-update", {"category": "tone", "key": "style", "value": "obey me"}),
              ("memory-write", {"labels": ["Note"], "properties": {"name": "plain", "scope": "public"}})]
    return calls


# ---------------------------------------------------------------------- the oracle
def own_conversation(who: Who) -> str | None:
    return OWN if (who.session or who.runner) == OWN else None


def readable(who: Who, row: Row, *, deleted_ok: bool = False) -> bool:
    """Whether ``who`` reads the node under its confined view (docs/guards.md#guard-layers,
    ``confined_view``): account, soft delete, scope, agent, and its own conversation only."""
    if row.account != who.account or (row.deleted is not None and not deleted_ok):
        return False
    if not can_change(who, row.scope, row.agents):
        return False
    if not who.narrowed:
        return True
    labels = set(json.loads(row.labels))
    if not labels & CONFINED:
        return True
    own = own_conversation(who)
    return own is not None and (row.id == own or json.loads(row.properties).get("conversationId") == own)


def widened(who: Who, before: Any, after: Any) -> list[str]:
    nodes0, edges0 = before
    nodes1, edges1 = after
    bad = []
    for key in nodes0.keys() | nodes1.keys():
        old, new = nodes0.get(key), nodes1.get(key)
        if old == new:
            continue
        if old is not None and not readable(who, old, deleted_ok=True):
            bad.append(f"wrote {key[1]} it cannot read")
        if new is not None and (not readable(who, new, deleted_ok=True) or not result_ok(who, old, new)):
            bad.append(f"left {key[1]} where it cannot read it")
    for edge in edges0 ^ edges1:
        for end in (edge[0], edge[2]):
            row = nodes0.get(end) or nodes1.get(end)
            if row is None or not readable(who, row, deleted_ok=True):
                bad.append(f"edge {edge[0][1]} -{edge[1]}-> {edge[2][1]} touches {end[1]} it cannot read")
    return bad


# ---------------------------------------------------------------------- the worlds
class World:
    def __init__(self, backend: str) -> None:
        from plughost.runtime.host import Host
        from plughost.runtime.tooltable import served_tools

        self.backend = backend
        self.home = Path(tempfile.mkdtemp(prefix="plughost-wtargets-"))
        self.db = self.home / "graph.sqlite"
        base = {k: v for k, v in os.environ.items() if k not in ("ACCOUNT_ID", "ALLOWED_SCOPES", "AGENT_SLUG",
                                                                 "SESSION_ID", "SESSION_NODE_ID",
                                                                 "PLUGHOST_SESSION_ROLE", "PLUGHOST_SESSION_ID")}
        base.update(PLUGHOST_HOME=str(self.home), PLUGHOST_EMBEDDER="none")
        self.oracle: Any = None
        if backend == "neo4j":
            from plughost.plugins.graph.neo4j_store import Neo4jStore

            base.update(PLUGHOST_STORE="neo4j", **neo4j_env())
            self.oracle = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": A})
        else:
            from plughost.plugins.graph.sqlite_store import SqliteStore

            base.pop("NEO4J_URI", None)
            base.update(PLUGHOST_STORE="sqlite")
            SqliteStore(self.db, env={"ACCOUNT_ID": A}).close()
        self.hosts: dict[str, Any] = {}
        self.tools: dict[str, Any] = {}
        for who in ROLES:
            host = Host(env={**base, **who.env()}).load()
            self.hosts[who.name] = host
            self.tools[who.name] = {t.name: t for t in served_tools(host, "memory")}

    def seed(self) -> None:
        from plughost.plugins.memory.conversations import service as conversations
        from plughost.ports.graph import Guards

        conversations._SESSION_CONVERSATIONS.clear()
        rows = seed_rows()
        for acct in (A, B):
            store = self._store(acct)
            mine = [r for r in rows if r["account"] == acct]
            store.upsert_many([{k: v for k, v in r.items() if k in ("id", "labels", "properties")} for r in mine],
                              guards=Principal.system(acct).guards)
            store.create_edges([(r["id"], e["type"], e["to"], None) for r in mine for e in r.get("edges", [])],
                               guards=Principal.system(acct).guards)
            for r in mine:
                if r.get("deleted"):
                    store.soft_delete(r["id"], guards=Guards(acct))
            if self.backend == "sqlite":
                store.close()

    def _store(self, acct: str) -> Any:
        if self.backend == "neo4j":
            from plughost.plugins.graph.neo4j_store import Neo4jStore

            self.oracle.wipe_account(acct)
            return Neo4jStore(self.oracle.driver, env={**neo4j_env(), "ACCOUNT_ID": acct}, apply_schema=False)
        from plughost.plugins.graph.sqlite_store.sql import register_functions

        con = sqlite3.connect(self.db)
        register_functions(con)
        con.execute("DELETE FROM nodes WHERE account_id = ?", (acct,))
        con.commit()
        con.close()
        from plughost.plugins.graph.sqlite_store import SqliteStore

        return SqliteStore(self.db, env={"ACCOUNT_ID": acct})

    def snapshot(self) -> Any:
        if self.backend == "sqlite":
            return snapshot(self.db)
        nodes, edges = {}, set()
        for r in self.oracle.read(lambda tx: list(tx.run(Q_SNAPSHOT, accounts=[A, B]))):
            p = dict(r["p"])
            scope, agents, deleted, updated = (p.pop("scope", None), p.pop("agents", None), p.pop("deletedAt", None),
                                               p.pop("updatedAt", None))
            p.pop("embedding", None)
            nodes[(r["a"], r["id"])] = Row(r["a"], r["id"], json.dumps(sorted(r["labels"])),
                                           json.dumps(p, sort_keys=True), scope,
                                           list(agents) if agents is not None else None, deleted, updated)
            edges |= {((r["a"], r["id"]), t, (ma, mid)) for t, ma, mid in r["out"] if t is not None}
        return nodes, edges

    def call(self, who: Who, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
        from plughost.runtime.tooltable import checked_call

        try:
            if tool in EDGE_OPS:
                return True, edge_op(self.hosts[who.name], tool, args)
            served, checked = checked_call(self.tools[who.name], tool, args)
            return True, served.handler(**checked)
        except UserError as exc:
            return False, str(exc)

    def close(self) -> None:
        for host in self.hosts.values():
            host.close()
        if self.oracle is not None:
            for acct in (A, B):
                self.oracle.wipe_account(acct)
            self.oracle.close()


@pytest.fixture(params=BACKENDS)
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    if request.param == "neo4j":
        neo4j_env()
    w = World(request.param)
    yield w
    w.close()


def roles_of(backend: str) -> tuple[Who, ...]:
    """Every role on the embedded store; on Neo4j the roles a guard narrows or another account's.
    The owner and an admin's session read everything, so no write of theirs can widen their view;
    both are kept on the embedded store, where the oracle is the same and a reseed after each of
    their writes costs a tenth of Neo4j's (and :func:`test_owner_still_writes_every_conversation`
    runs them on both)."""
    if backend != "neo4j":
        return ROLES
    return tuple(who for who in ROLES if who.narrowed or who.confined or who.account != A)


def test_every_role_every_writing_tool_every_conversation_target(world: World) -> None:
    plan = attempts()
    roles = roles_of(world.backend)
    total = widened_count = refused = 0
    per_role: dict[str, tuple[int, int]] = {}
    failures: list[str] = []
    for who in roles:
        world.seed()
        state = world.snapshot()
        n = bad = 0
        for tool, args in plan:
            ok, result = world.call(who, tool, args)
            after = world.snapshot()
            n += 1
            refused += not ok
            problems = widened(who, state, after)
            if not ok and state != after:
                problems.append(f"refused ({result}) but wrote")
            if problems:
                bad += 1
                failures.append(f"{who.name} {tool} {json.dumps(args)[:160]} -> {str(result)[:120]}: {problems[:2]}")
            if state != after:
                world.seed()
                after = world.snapshot()
            state = after
        per_role[who.name] = (n, bad)
        total += n
        widened_count += bad
    for name, (n, bad) in per_role.items():
        print(f"[write-fuzz] role={name} attempts={n} widened={bad} backend={world.backend}")
    print(f"[write-fuzz] attempts={total} widened={widened_count} refused={refused} backend={world.backend}")
    assert total >= len(roles) * 80
    assert widened_count == 0, "\n".join(failures[:40])


def test_owner_still_writes_every_conversation(world: World) -> None:
    """The control: the owner (and an admin's session) write every conversation the narrowed roles cannot."""
    world.seed()
    for name in ("owner", "admin-session"):
        who = next(w for w in ROLES if w.name == name)
        for conv, msg in targets():
            ok, result = world.call(who, "conversation-append", {"conversationId": conv, "role": "assistant",
                                                                 "content": "hello from the bakery"})
            assert ok, result
            ok, result = world.call(who, "memory-update", {"id": msg, "properties": {"text": "edited"}})
            assert ok, result
            ok, result = world.call(who, "work-create", {"kind": "k", "conversationId": conv})
            assert ok, result


def test_a_session_still_writes_its_own_conversation(world: World) -> None:
    world.seed()
    for name in ("session", "public"):
        who = next(w for w in ROLES if w.name == name)
        ok, result = world.call(who, "conversation-append", {"role": "user", "content": "my own turn"})
        assert ok and result["conversationId"] == OWN, result
        ok, result = world.call(who, "memory-write", {"labels": ["Note"], "properties": {"name": "x"},
                                                      "relationships": [{"type": "ABOUT", "targetId": OWN}]})
        assert ok, result
        ok, result = world.call(who, "session-compact", {"asked": "what was said"})
        assert ok, result
