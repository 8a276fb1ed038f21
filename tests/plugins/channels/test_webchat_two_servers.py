"""One webchat conversation on every server (docs/channels.md#several-servers-on-one-store).

Two ``plughost serve`` processes, separate homes, one store (the embedded SQLite file, which
several processes on one machine may open, or one Neo4j): a visitor's messages go to either
server, as a load balancer without stickiness sends them, and a read from either shows every
stored message in the same order and with the same numbers; a page waiting on one server gets
the reply the other server wrote.
"""

from __future__ import annotations

import json
import threading
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.backends import needs_neo4j, neo4j_env
from tests.support.channels_support import agent_command, wait_for, write_account
from tests.support.serve_helpers import ServeProcess, start_serve

pytestmark = [pytest.mark.timeout(300)]

SESSION = "visitor-two-servers"


def _post(server: ServeProcess, text: str, n: int) -> dict[str, Any]:
    body = json.dumps({"session": SESSION, "text": text, "id": f"c{n}"}).encode()
    req = urllib.request.Request(f"{server.base}/channels/webchat/messages", data=body,
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 202
        return dict(json.loads(resp.read()))


def _events(server: ServeProcess, after: int = 0, wait: int = 0) -> list[dict[str, Any]]:
    url = f"{server.base}/channels/webchat/messages?session={SESSION}&after={after}&wait={wait}"
    with urllib.request.urlopen(url, timeout=60) as resp:
        return list(json.loads(resp.read())["events"])


def _shown(events: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    return [(e["seq"], e["role"], e["text"]) for e in events]


def _conversation_on_two_servers(tmp_path: Path, env: dict[str, str], account: str) -> None:
    servers = []
    for name in "ab":
        home = tmp_path / f"home-{name}"
        write_account(home, account)
        servers.append(start_serve(env={**env, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": account,
                                        "PLUGHOST_AGENT_COMMAND": agent_command(tmp_path),
                                        "PLUGHOST_AGENT_TIMEOUT": "30", "PLUGHOST_SHUTDOWN_GRACE": "3"},
                                   timeout=120))
    a, b = servers
    try:
        expected: list[tuple[int, str, str]] = []
        for n in range(4):  # alternate servers, each reply in before the next question
            server = servers[n % 2]
            _post(server, f"question {n}", n)
            expected += [(len(expected) + 1, "user", f"question {n}"),
                         (len(expected) + 2, "assistant", f"echo: question {n}")]
            wait_for(lambda s=server, k=len(expected): len(_events(s)) == k, timeout=60, interval=0.1)
            for reader in servers:  # every reply visible from both, numbered alike
                assert _shown(_events(reader)) == expected

        # a page long-polling b sees the reply a writes, without a message of its own to b
        got: list[list[dict[str, Any]]] = []
        waiting = threading.Thread(target=lambda: got.append(_events(b, after=len(expected), wait=20)))
        waiting.start()
        _post(a, "question 4", 4)
        waiting.join(timeout=40)
        assert got and got[0], "b's long poll ended without the message a stored"
        tail = wait_for(lambda: [e for e in _events(b, after=len(expected)) if e["role"] == "assistant"] and
                        _events(b, after=len(expected)), timeout=60, interval=0.1)
        assert _shown(tail) == [(9, "user", "question 4"), (10, "assistant", "echo: question 4")]
        assert _shown(_events(a)) == _shown(_events(b))
    finally:
        for server in servers:
            server.terminate(timeout=60)


def test_one_conversation_on_two_servers_sharing_the_embedded_store(tmp_path: Path) -> None:
    env = {"PLUGHOST_GRAPH_DB": str(tmp_path / "shared.sqlite"), "PLUGHOST_STORE": "sqlite",
           "PLUGHOST_EMBEDDER": "none"}
    _conversation_on_two_servers(tmp_path, env, "acct-webchat-2srv")


@needs_neo4j
def test_one_conversation_on_two_servers_sharing_neo4j(tmp_path: Path) -> None:
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    env = {**neo4j_env(), "PLUGHOST_STORE": "neo4j"}
    account = f"acct-webchat-2srv-{uuid.uuid4().hex[:8]}"
    try:
        _conversation_on_two_servers(tmp_path, env, account)
    finally:
        store = Neo4jStore.from_env({**env, "ACCOUNT_ID": account})
        ids = [r["id"] for r in store._rows("MATCH (n:GraphNode {accountId: $a}) RETURN n.id AS id", {"a": account})]
        store._rows("UNWIND $names AS name MATCH (l:Lease {name: name}) DELETE l",
                    {"names": [f"turn:{i}" for i in ids]}, read=False)
        store.wipe_account(account)
        store.close()
