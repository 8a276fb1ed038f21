"""`plughost memory import FILE.jsonl`: bulk write with embeddings, batched, with a progress bar."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from plughost import UserError
from plughost.api.store import ImportSession
from plughost.plugins.memory.archives.sources import archive_format
from plughost.plugins.memory.bulk_import import import_jsonl
from plughost.plugins.memory.commands.common import account
from plughost.plugins.memory.embedding.provider import check_dimensions

HELP = "import nodes from a JSON-lines file (graph import format), embedding as it goes"
ARCHIVES = {"claude": "a Claude export", "chatgpt": "a ChatGPT export", "whatsapp": "a WhatsApp chat export",
            "mbox": "an mbox", "eml": "mail (.eml)"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="one node per line: {id?, labels, properties, edges?}")
    parser.add_argument("--batch-size", type=int, default=500, help="nodes per committed batch (default 500)")
    parser.add_argument("--no-embed", action="store_true", help="store without embeddings (reindex later)")
    parser.add_argument("--no-progress", action="store_true", help="never draw the progress bar")


def run(args: argparse.Namespace, host: Any) -> int:
    account(host)  # this command's own line when ACCOUNT_ID is unset
    archive = archive_format(args.file)
    if archive is not None:
        raise UserError(f"{args.file}: {ARCHIVES[archive]}, not JSON lines; import it with "
                        f"plughost memory import-archive {shlex.quote(str(args.file))}")
    guards = ImportSession.admit(host.principal, args.file, "memory import")
    store = host.store()
    embedder = None if args.no_embed else host.embedder()
    check_dimensions(store, embedder)
    summary = import_jsonl(store, embedder, args.file, guards=guards, batch_size=args.batch_size,
                           progress=False if args.no_progress else None)
    print(f"import: nodes={summary.nodes} edges={summary.edges} skipped={summary.skipped} "
          f"embedded={summary.embedded} seconds={summary.seconds:.2f} embedSeconds={summary.embed_seconds:.2f}")
    why = not_embedded_line(summary.not_embedded, summary.embed_failed,
                            "--no-embed" if args.no_embed else "there is no embedder (PLUGHOST_EMBEDDER; the [embed] warn line says why)")
    if why:
        print(why)
    return 2 if summary.errors else 0


def not_embedded_line(reasons: dict[str, int], failed: int, off: str) -> str | None:
    """Why nodes of the import got no vector, in one line (None when every node that could be was)."""
    labels = {k.split(":", 1)[1]: n for k, n in reasons.items() if k.startswith("label:")}
    parts = []
    if labels:
        named = ", ".join(f"{label}={n}" for label, n in sorted(labels.items()))
        parts.append(f"{sum(labels.values())} whose labels have no vector index ({named}; "
                     "the vector-indexed labels: docs/graph.md#labels)")
    if reasons.get("embedding-off"):
        parts.append(f"{reasons['embedding-off']} not embedded because {off} (plughost memory reindex embeds them later)")
    if failed:
        parts.append(f"{failed} whose embedding failed (see the [graph-write] warn line; plughost memory reindex "
                     "retries them)")
    if reasons.get("no-text"):
        parts.append(f"{reasons['no-text']} with no text to embed")
    if reasons.get("own-embedding"):
        parts.append(f"{reasons['own-embedding']} with their own embedding (stored as given)")
    return "import: not embedded: " + "; ".join(parts) if parts else None
