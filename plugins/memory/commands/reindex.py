"""`plughost memory reindex`: backfill missing embeddings with a progress bar on a terminal."""

from __future__ import annotations

import argparse
from typing import Any

from host.errors import UserError
from plugins.memory.commands.common import account

HELP = "embed every node of ACCOUNT_ID that has no embedding yet (skip-and-continue)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--labels", help="comma list of labels to reindex (default: every vector-indexed label)")
    parser.add_argument("--batch-size", type=int, default=32, help="nodes per embed call (default 32)")
    parser.add_argument("--limit", type=int, default=None, help="stop after this many nodes")
    parser.add_argument("--no-progress", action="store_true", help="never draw the progress bar")


def run(args: argparse.Namespace, host: Any) -> int:
    from plugins.memory.embedder import check_dimensions
    from plugins.memory.reindex import reindex

    acct = account(host)
    labels = [x.strip() for x in args.labels.split(",") if x.strip()] if args.labels else None
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit: expected a positive integer, got {args.limit}")
    store, embedder = host.store(), host.embedder()
    check_dimensions(store, embedder)
    summary = reindex(store, embedder, account_id=acct, labels=labels, batch_size=args.batch_size,
                      limit=args.limit, progress=False if args.no_progress else None)
    print(f"reindex: processed={summary.processed} skipped={summary.skipped} seconds={summary.seconds:.2f}")
    return 0
