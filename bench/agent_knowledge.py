"""A public agent's KNOWLEDGE.md: what one rebuild costs as the public knowledge grows.

    python bench/agent_knowledge.py [--docs 50,200,800] [--rounds 5]

For each size, a fresh embedded store holds that many public documents (three sections each) and
as many private ones; the agent subscribes to five keywords, each matching a fifth of the public
documents. Prints, per size, the median milliseconds of one rebuild (the searches, the sections
read, the file written when it changed) and what the assembled part holds::

    docs=N rebuild-ms=… documents=… chars=… left-out=…
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
KEYWORDS = ["sourdough", "allergens", "delivery", "wedding", "opening"]


def one(size: int, rounds: int) -> str:
    home = Path(tempfile.mkdtemp(prefix="bench-knowledge-"))
    os.environ.update(PLUGHOST_HOME=str(home), ACCOUNT_ID="bench", PLUGHOST_EMBEDDER="none", PLUGHOST_AUDIT_MCP="0")
    from plughost import Principal
    from plughost.plugins.memory.knowledge.rebuild import rebuild
    from plughost.runtime import agent_files as af
    from plughost.runtime.accounts import create_account
    from plughost.runtime.host import Host

    create_account("bench", home)
    af.write_file(home, "bench", "counter", af.IDENTITY, f"---\nkeywords: [{', '.join(KEYWORDS)}]\n---\nHi.\n")
    host = Host(env=dict(os.environ)).load()
    store, rows = host.store(), []
    for i in range(size * 2):
        scope = "public" if i % 2 == 0 else "admin"
        topic = KEYWORDS[i % len(KEYWORDS)]
        att = f"doc-{i}"
        sections = [{"id": f"{att}-s{j}", "labels": ["Section"], "properties": {
            "title": f"Part {j}", "body": f"About {topic}: paragraph {j} of document {i}, " * 6, "index": j,
            "attachmentId": att, "scope": scope}} for j in range(3)]
        rows += sections + [{"id": att, "labels": ["KnowledgeDocument"], "properties": {
            "title": f"Document {i} on {topic}", "attachmentId": att, "scope": scope},
            "edges": [{"type": "HAS_SECTION", "to": s["id"]} for s in sections]}]
    store.upsert_many(rows, guards=Principal.system("bench").guards)
    times = []
    for _ in range(rounds):
        (af.agent_dir(home, "bench", "counter") / af.KNOWLEDGE).unlink(missing_ok=True)
        started = time.perf_counter()
        rebuild(store, home, "bench", ["counter"], reason="bench")
        times.append((time.perf_counter() - started) * 1000)
    part = af.assembled_part(af.knowledge(home, "bench", "counter"))
    host.close()
    left = part.rsplit("\n(", 1)[1].split(" ", 1)[0] if "more matching document(s) left out" in part else "0"
    return (f"docs={size} rebuild-ms={statistics.median(times):.1f} documents={part.count(chr(10) + '## ') + 1} "
            f"chars={len(part)} left-out={left}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="50,200,800")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for size in (int(s) for s in args.docs.split(",")):
        print(one(size, args.rounds), flush=True)


if __name__ == "__main__":
    main()
