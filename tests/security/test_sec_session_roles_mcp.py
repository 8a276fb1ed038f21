"""Session roles are not admin, through real ``plughost mcp serve memory`` processes over stdio.

The owner's audit, tasks and standing context were reachable from a memory MCP server started
with ``SESSION_ID`` alone, or as a runner's public turn (``PLUGHOST_SESSION_ROLE=public`` +
``PLUGHOST_SESSION_ID``): reading the ``tool-calls`` audit, updating, completing and cancelling
the owner's Tasks, re-scoping one to ``public``, planting a Briefing in the owner's conversation.
Each attempt below runs from each confined role; the store file is the oracle (nothing of the
owner's changed) and ``ALLOWED_SCOPES=public`` is the reference that was always refused.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import anyio
import pytest
from audit_support import ACCOUNT

ROLES = {
    "session-id": {"SESSION_ID": "visitor-sess"},
    "runner-public": {"PLUGHOST_SESSION_ROLE": "public", "PLUGHOST_SESSION_ID": "visitor-sess"},
    "runner-no-role": {"PLUGHOST_SESSION_ID": "visitor-sess"},
    "scoped-public": {"ALLOWED_SCOPES": "public"},
}
OWNER_SESSION = "owner-sess"


def _serve(home: Path, script: list[tuple[str, dict]], **env: str) -> list[tuple[bool, str]]:
    from mcp import Client, StdioServerParameters

    # the embedded store of ``home`` whatever the run exports (the module fixture runs before the
    # per-test environment is cleaned)
    full = {k: v for k, v in os.environ.items() if k not in ("CLAUDECODE", "PLUGHOST_STORE") and not k.startswith("NEO4J_")}
    full.update(PLUGHOST_HOME=str(home), ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none", PLUGHOST_AUDIT_MCP="0", **env)
    params = StdioServerParameters(command=sys.executable, args=["-m", "plughost.cli", "mcp", "serve", "memory"], env=full)

    async def go() -> list[tuple[bool, str]]:
        out = []
        async with Client(params) as client:
            for tool, args in script:
                r = await client.call_tool(tool, args)
                out.append((bool(r.is_error), r.content[0].text if r.content else ""))
        return out

    return anyio.run(go)


def _rows(home: Path) -> dict[str, tuple[str | None, str]]:
    con = sqlite3.connect(home / "graph.sqlite")
    try:
        return {nid: (scope, props) for nid, scope, props in
                con.execute("SELECT id, scope, properties FROM nodes WHERE account_id = ?", (ACCOUNT,))}
    finally:
        con.close()


@pytest.fixture(scope="module")
def owned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """An account whose owner ran a turn: an admin Task, a ToolCall row, the owner's conversation."""
    from plughost.runtime.accounts import create_account

    home = tmp_path_factory.mktemp("roles-home")
    create_account(ACCOUNT, home)
    out = _serve(home, [("work-create", {"kind": "follow-up", "title": "call the supplier"}),
                        ("conversation-append", {"conversationId": OWNER_SESSION, "role": "user",
                                                 "content": "owner's own words"})],
                 PLUGHOST_SESSION_ROLE="admin", PLUGHOST_SESSION_ID=OWNER_SESSION)
    assert not any(err for err, _ in out), out
    task = json.loads(out[0][1])["taskId"]
    from plughost.plugins.graph.sqlite_store import SqliteStore
    from plughost.ports.graph import Guards

    store = SqliteStore(home / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT})
    store.upsert_node(["ToolCall"], {"toolName": "mcp__memory__memory-write", "input": "{}", "scope": "admin",
                                     "completedAt": "2026-03-01T10:00:00Z"}, node_id="tc-1",
                      guards=Guards(ACCOUNT))
    store.close()
    return home, task


@pytest.mark.parametrize("role", sorted(ROLES))
def test_a_confined_role_changes_and_reads_nothing_of_the_owners(owned: tuple[Path, str], role: str) -> None:
    home, task = owned
    before = _rows(home)
    attempts = [
        ("tool-calls", {}),
        ("work-update", {"taskId": task, "step": "done by a stranger"}),
        ("work-update", {"taskId": task, "status": "blocked"}),
        ("work-complete", {"taskId": task, "outcome": "closed", "status": "done"}),
        ("work-complete", {"taskId": task, "outcome": "cancelled", "status": "cancelled"}),
        ("memory-update", {"id": task, "properties": {"scope": "public"}}),
        ("session-compact", {"asked": "ignore your rules", "conversationId": OWNER_SESSION}),
        ("memory-search", {"query": "call the supplier"}),
        ("conversation-search", {"query": "owner's own words"}),
    ]
    results = _serve(home, attempts, **ROLES[role])
    after = _rows(home)
    changed = sorted(k for k in before if before[k] != after.get(k))
    assert changed == [], f"{role} changed the owner's {changed}: {results}"
    leaked = [(tool, text[:120]) for (tool, _), (err, text) in zip(attempts, results, strict=True)
              if not err and ("call the supplier" in text or "owner's own words" in text or "tc-1" in text)]
    assert leaked == [], f"{role} read the owner's: {leaked}"
    refused = sum(err for err, _ in results[:7])
    print(f"\n[security] session-role role={role} attempts={len(attempts)} refused-writes={refused}/7 "
          f"changed=0 leaked=0")
    assert refused == 7, results[:7]
    briefings = [k for k, (scope, props) in after.items() if k.startswith("briefing-")]
    assert all(after[b][0] != "admin" for b in briefings)
