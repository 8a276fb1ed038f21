"""`plughost memory reindex`: backfill missing embeddings with a progress bar on a terminal."""

from __future__ import annotations

import argparse
from typing import Any

from plughost import UserError
from plughost.api.store import require_admin
from plughost.plugins.memory.commands.common import account
from plughost.plugins.memory.embedding.provider import check_dimensions
from plughost.plugins.memory.embedding.reindex import backfill_chunk_summaries, reindex, reindex_contexts

HELP = "embed every node of ACCOUNT_ID that has no embedding yet (skip-and-continue)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--labels", help="comma list of labels to reindex (default: every vector-indexed label)")
    parser.add_argument("--batch-size", type=int, default=32, help="nodes per embed call (default 32)")
    parser.add_argument("--limit", type=int, default=None, help="stop after this many nodes")
    parser.add_argument("--no-progress", action="store_true", help="never draw the progress bar")
    parser.add_argument("--context", action="store_true",
                        help="first rebuild every Message's indexed form (speaker, day, preceding turns: "
                             "PLUGHOST_MESSAGE_CONTEXT_TURNS) and re-embed the turns it changes")
    parser.add_argument("--entities", action="store_true",
                        help="first remove the Entity and Fact nodes no live source of their scope and agents "
                             "reaches, then extract every Message's entities and facts into Entity and Fact "
                             "nodes (what PLUGHOST_MEMORY_ENTITIES=1 writes with each new turn)")


def run(args: argparse.Namespace, host: Any) -> int:
    acct = account(host)
    # every form reads (and rewrites) every node of the account, seen or not, as memory-reindex does
    require_admin(host.principal, "memory reindex")
    labels = [x.strip() for x in args.labels.split(",") if x.strip()] if args.labels else None
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit: expected a positive integer, got {args.limit}")
    store, embedder = host.store(), host.embedder()
    if not labels or "Chunk" in labels:  # Chunks stored before chunks had summaries: no embedder needed
        print(f"reindex: chunk-summaries backfilled={backfill_chunk_summaries(store, acct)}")
    if args.entities:
        from plughost.plugins.memory.entities.graph import backfill, sweep

        swept = sweep(store, acct)  # derived nodes no live source of their visibility reaches go first
        print("reindex: withdrawn " + " ".join(f"{k}={v}" for k, v in swept.items()))
        counts = backfill(store, acct)
        print("reindex: entities " + " ".join(f"{k}={v}" for k, v in counts.items()))
        if embedder is None and not args.context:
            return 0
    if args.context:
        if embedder is not None:
            check_dimensions(store, embedder)
        changed = reindex_contexts(store, embedder, account_id=acct, batch_size=args.batch_size)
        print(f"reindex: context changed={changed}")
        if embedder is None:  # the BM25 form is rebuilt; the vectors wait for an embedder
            return 0
    check_dimensions(store, embedder)
    summary = reindex(store, embedder, account_id=acct, labels=labels, batch_size=args.batch_size,
                      limit=args.limit, progress=False if args.no_progress else None, summaries=False)
    print(f"reindex: processed={summary.processed} skipped={summary.skipped} seconds={summary.seconds:.2f}")
    return 0
