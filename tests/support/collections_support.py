"""Helpers for the collection tests: a notes folder, a host for one account, store queries."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ACCOUNT = "acct-c"


def write_notes(root: Path, count: int, *, prefix: str = "note") -> list[Path]:
    """``count`` linked Markdown notes (each links the next by wikilink and the previous by path)."""
    paths = []
    for i in range(count):
        folder = root / f"d{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{prefix}-{i}.md"
        prev = f"../d{(i - 1) % 7}/{prefix}-{i - 1}.md" if i else "none.md"
        path.write_text(f"---\ntitle: {prefix.title()} {i}\ntags: [t{i % 3}]\n---\n# {prefix.title()} {i}\n\n"
                        f"Body of note {i} about topic{i % 11}. Next: [[{prefix.title()} {i + 1}]]; "
                        f"previous: [prev]({prev}).\n\n## Details\n\nDetail paragraph {i}.\n", encoding="utf-8")
        paths.append(path)
    return paths


def host_for(home: Path, **env: str) -> Any:
    from plughost.runtime.host import Host

    return Host(env={**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none",
                     **env}).load()


def documents(host: Any, collection: str, include_deleted: bool = False) -> list[Any]:
    from plughost.ports.graph import Guards

    store = host.store()
    out, offset = [], 0
    while True:
        page = store.find(guards=Guards(ACCOUNT), labels=["KnowledgeDocument"], where={"collection": collection},
                          limit=500, offset=offset)
        out.extend(page)
        if len(page) < 500:
            break
        offset += 500
    if include_deleted:
        return out
    return [d for d in out if not d.deleted]
