"""Task provenance through a real ``plughost mcp serve memory`` over stdio: work-create → three
memory-writes with its taskId → the conversation's tasks' PRODUCED edges are exactly those three;
a public process cannot update, complete or hang work from an admin task. The store is the oracle."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
from audit_support import ACCOUNT, PLANTED

from plughost.ports.graph import Guards


def session(home: Path, script: list[tuple[str, dict]], **env: str) -> list[tuple[bool, str]]:
    from mcp import Client, StdioServerParameters

    full = {k: v for k, v in os.environ.items() if k != "CLAUDECODE"}
    full.update(PLUGHOST_HOME=str(home), ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none", **env)
    params = StdioServerParameters(command=sys.executable, args=["-m", "plughost.cli", "mcp", "serve", "memory"], env=full)

    async def go() -> list[tuple[bool, str]]:
        out = []
        async with Client(params) as client:
            for tool, args in script:
                if callable(args):
                    args = args(out)
                r = await client.call_tool(tool, args)
                out.append((bool(r.is_error), r.content[0].text if r.content else ""))
        return out

    return anyio.run(go)


def store(home: Path):
    from plughost.plugins.graph.sqlite_store import SqliteStore

    return SqliteStore(home / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT})


def test_work_create_then_three_writes_are_what_the_conversation_produced(plughost_home: Path) -> None:
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    task = lambda out: json.loads(out[1][1])["taskId"]  # noqa: E731
    script = [
        ("conversation-append", {"role": "user", "content": "Import the three contacts", "conversationId": "conv-t1"}),
        ("work-create", {"kind": "import", "inputs": {"source": "crm", "crmToken": PLANTED, "label": "vip"},
                         "inputSchema": {"type": "object", "properties": {"label": {"type": "string", "secret": True}}},
                         "conversationId": "conv-t1"}),
        *[("memory-write", lambda out, n=n: {"labels": ["Person"], "properties": {"name": f"Contact {n}"},
                                             "producedByTaskId": task(out)}) for n in range(3)],
        ("memory-write", {"labels": ["Note"], "properties": {"title": "unrelated"}}),
        ("work-update", lambda out: {"taskId": task(out), "step": "wrote three people"}),
        ("work-complete", lambda out: {"taskId": task(out), "outcome": "three contacts imported"}),
        ("work-update", lambda out: {"taskId": task(out), "step": "too late"}),
    ]
    out = session(plughost_home, script)
    assert [e for e, _ in out] == [False] * 8 + [True], out
    written = sorted(json.loads(text)["elementId"] for _, text in out[2:5])
    done = json.loads(out[7][1])
    assert done["status"] == "done" and done["produced"] == written

    s, g = store(plughost_home), Guards(ACCOUNT)
    tasks = [n.node.id for n in s.expand(["conv-t1"], guards=g)["conv-t1"] if n.type == "RAISED_DURING"
             and n.direction == "in"]
    produced = sorted(n.node.id for t in tasks for n in s.expand([t], guards=g, limit=100)[t]
                      if n.type == "PRODUCED" and n.direction == "out")
    assert tasks == [task(out)] and produced == written
    node = s.get(task(out), guards=g)
    assert node.properties["scope"] == "admin" and node.properties["steps"][0].endswith("wrote three people")
    inputs = json.loads(node.properties["inputs"])
    assert inputs == {"source": "crm", "crmToken": "[redacted]", "label": "[redacted]"}
    assert PLANTED not in (plughost_home / "graph.sqlite").read_bytes().decode("latin-1")
    logs = (plughost_home / "logs" / "server.log").read_text()
    assert "[task] action-start" in logs and "[task] step" in logs and "[task] done" in logs and "produced=3" in logs

    # a public process: it cannot see, update, complete or hang work from the admin task
    before = s.get(task(out), guards=g).properties
    attack = session(plughost_home, [
        ("work-update", {"taskId": task(out), "step": "hijack"}),
        ("work-complete", {"taskId": task(out), "outcome": "hijack", "status": "failed"}),
        ("work-create", {"kind": "spy", "conversationId": "conv-t1"}),
        ("memory-write", {"labels": ["Note"], "properties": {"title": "x"}, "producedByTaskId": task(out)}),
        ("work-create", {"kind": "own"}),
    ], ALLOWED_SCOPES="public", AGENT_SLUG="shop")
    assert [e for e, _ in attack] == [True, True, True, True, False], attack
    assert all("hijack" not in t and "Contact" not in t for _, t in attack)
    assert s.get(task(out), guards=g).properties == before
    own = s.get(json.loads(attack[4][1])["taskId"], guards=g).properties
    assert own["scope"] == "public" and own["agents"] == ["shop"]
