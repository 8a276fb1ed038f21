"""Channel messages are searchable by meaning once stored: a real ``plughost serve`` with the local
MiniLM embedder embeds every webchat Message in the background within seconds of its 2xx, and
``plughost memory audit`` then counts no node without an embedding."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx
from channels_support import ACCOUNT, agent_command, write_account
from serve_helpers import start_serve, stop_process

from tests.conftest import require_local_model, run_cli

VISITS = {
    "bread": ["hello there", "Do you bake gluten-free sourdough loaves?", "thanks, see you"],
    "cake": ["hi", "Can I order a birthday cake with my daughter's name on it?", "great"],
    "hours": ["good morning", "Is the shop open on Sunday afternoons?", "ok bye"],
}
SETTLE_S = 90.0  # a bound for "eventually": on a loaded machine the first embedding waits for the model to load


def _require_local_model() -> None:
    require_local_model()


def _open(home: Path, embedder: str = "none"):  # noqa: ANN202 — a loaded Host
    from plughost.runtime.host import Host

    return Host(env={**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_STORE": "sqlite",
                     "PLUGHOST_EMBEDDER": embedder}).load()


def _pending(home: Path) -> tuple[int, int]:
    """(stored Messages, those without an embedding), read by a fresh host from the server's file."""
    from plughost.ports.graph import Guards

    host = _open(home)
    try:
        store = host.store()
        total = len(store.find(guards=Guards(ACCOUNT), labels=["Message"], limit=10_000))
        return total, len(store.missing_embeddings(account_id=ACCOUNT, labels=["Message"], limit=10_000))
    finally:
        host.close()


def test_webchat_messages_are_embedded_in_the_background(plughost_home: Path, tmp_path: Path) -> None:
    _require_local_model()
    write_account(plughost_home)
    env = {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_STORE": "sqlite", "NEO4J_URI": "", "PLUGHOST_EMBEDDER": "local",
           "PLUGHOST_AGENT": "command", "PLUGHOST_AGENT_COMMAND": agent_command(tmp_path),
           "PLUGHOST_RATE_WEBCHAT_ADDRESS": "0", "PLUGHOST_RATE_WEBCHAT_VISITOR": "0"}
    served = start_serve(env=env)
    try:
        with httpx.Client(base_url=served.base, timeout=30) as client:
            for n, (topic, texts) in enumerate(VISITS.items()):
                session = f"visitor-000{n}"  # the sender is in the indexed form: no topic word in it
                for i, text in enumerate(texts):
                    r = client.post("/channels/webchat/messages", json={"session": session, "text": text,
                                                                        "id": f"{topic}-{i}"})
                    assert r.status_code == 202, r.text
            posted = time.monotonic()
            want = 2 * sum(len(t) for t in VISITS.values())  # each message and its echo reply
            while True:
                total, missing = _pending(plughost_home)
                if (total >= want and missing == 0) or time.monotonic() - posted > SETTLE_S:
                    break
                time.sleep(0.2)
            settled = time.monotonic() - posted
        assert (total, missing) == (want, 0), f"{missing} of {total} Messages without an embedding after {settled:.1f}s"
        print(f"every Message embedded {settled:.2f}s after the last 202")
    finally:
        stop_process(served.proc)
    log = (plughost_home / "logs" / "server.log").read_text()
    assert "[embed-queue] op=start account=acct-000 embedder=local" in log and "[embed-queue] op=embedded" in log
    assert served.proc.returncode == 0 and "Traceback" not in served.stderr_path.read_text(errors="replace")

    audit = run_cli("memory", "audit", "--json", env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_STORE": "sqlite"})
    assert audit.returncode == 0, audit.stderr
    assert json.loads(audit.stdout)["nullEmbedding"] == {}, audit.stdout

    from plughost.plugins.memory.conversations.service import Conversations

    query = "bread for someone who cannot eat wheat"  # no word in common with what was asked
    host = _open(plughost_home, "local")
    try:
        found = Conversations(host.store(), host.embedder(), host.env).search(query=query, limit=3)["results"]
        words = Conversations(host.store(), None, host.env).search(query=query, limit=3)["results"]
    finally:
        host.close()
    assert found and "gluten-free sourdough" in found[0]["content"], found
    assert not any("sourdough" in (r["content"] or "") for r in words), words  # BM25 alone misses it
