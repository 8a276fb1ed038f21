"""`plughost memory import FILE.jsonl`: bulk write with embeddings, batched, with a progress bar."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from host.util.errors import UserError
from plugins.memory.commands.common import account

HELP = "import nodes from a JSON-lines file (graph import format), embedding as it goes"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="one node per line: {id?, labels, properties, edges?}")
    parser.add_argument("--batch-size", type=int, default=500, help="nodes per committed batch (default 500)")
    parser.add_argument("--no-embed", action="store_true", help="store without embeddings (reindex later)")
    parser.add_argument("--no-progress", action="store_true", help="never draw the progress bar")


def run(args: argparse.Namespace, host: Any) -> int:
    from host.ports.graph import require_admin
    from plugins.memory.bulk_import import import_jsonl
    from plugins.memory.embedder import check_dimensions

    acct = account(host)
    require_admin(host.principal, "memory import")  # it writes rows without per-row guards
    if not args.file.is_file():
        raise UserError(f"{args.file}: no such file (expected a JSON-lines file)")
    store = host.store()
    embedder = None if args.no_embed else host.embedder()
    check_dimensions(store, embedder)
    summary = import_jsonl(store, embedder, args.file, account_id=acct, batch_size=args.batch_size,
                           progress=False if args.no_progress else None)
    print(f"import: nodes={summary.nodes} edges={summary.edges} skipped={summary.skipped} "
          f"embedded={summary.embedded} seconds={summary.seconds:.2f} embedSeconds={summary.embed_seconds:.2f}")
    return 2 if summary.errors else 0
