"""`plughost graph import FILE.jsonl`, `plughost graph purge` and `plughost graph compact`
(contributed through a hook)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from host.runtime.types import CliCommand
from host.util.errors import UserError
from plugins.graph import IMPORT_BATCH

HELP = "graph store maintenance: bulk import, purge of soft-deleted nodes, vector index compaction"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    imp = sub.add_parser("import", help="import nodes from a JSON-lines file into ACCOUNT_ID's graph")
    imp.add_argument("file", type=Path, help="one node per line: {id?, labels, properties, edges?}")
    imp.add_argument("--batch-size", type=int, default=None,
                     help=f"nodes per committed transaction, at most (default {IMPORT_BATCH:,}; 50,000 on Neo4j)")
    imp.add_argument("--no-progress", action="store_true", help="never draw the progress bar")
    purge = sub.add_parser("purge", help="hard-delete nodes soft-deleted longer ago than the grace period")
    purge.add_argument("--days", type=float, default=7.0, help="grace period in days (default 7)")
    purge.add_argument("--all-accounts", action="store_true",
                       help="purge every account: the install's operator only, with ACCOUNT_ID unset "
                            "(default: ACCOUNT_ID's account when set, else every account)")
    compact = sub.add_parser("compact", help="rebuild Neo4j's vector indexes in one pass each (after a bulk load "
                             "of embeddings; the embedded store scores exactly and has none)")
    compact.add_argument("--label", action="append", default=None,
                         help="only this label's index (repeatable; default: every label in use)")
    compact.add_argument("--wait-seconds", type=int, default=3600,
                         help="how long to wait for the rebuilt indexes to come online (default 3600)")


def _account(host: Any) -> str:
    return str(host.principal.require_account("the id of the account to import into"))


def _labels(values: list[str] | None) -> list[str] | None:
    """``--label`` values checked as label names (the error names the flag, not a list index)."""
    from plugins.graph.common import check_name

    for value in values or []:
        check_name(value, "--label")
    return list(dict.fromkeys(values)) if values else None


def run(args: argparse.Namespace, host: Any) -> int:
    if args.action == "import":
        from host.ports.graph import require_admin
        from plugins.graph.importer import import_jsonl

        account = _account(host)
        require_admin(host.principal, "graph import")  # it writes rows without per-row guards
        if not args.file.is_file():
            raise UserError(f"{args.file}: no such file (expected a JSON-lines file)")
        summary = import_jsonl(host.store(), args.file, account_id=account, batch_size=args.batch_size,
                               progress=False if args.no_progress else None)
        return 2 if summary.errors else 0
    if args.action == "purge":
        from host.ports.graph import require_admin
        from host.util.log import log

        require_admin(host.principal, "graph purge")  # it hard-deletes rows without per-row guards
        if args.days < 0:
            raise UserError(f"--days: expected a non-negative number, got {args.days}")
        only = host.principal.account
        if args.all_accounts and only:  # an account's admin is trusted with its own account, never another's
            raise UserError(f"--all-accounts: refused in account '{only}''s process (ACCOUNT_ID); it purges only "
                            "its own account. Every account is the install operator's: run it with ACCOUNT_ID "
                            "unset (ACCOUNT_ID= plughost graph purge --all-accounts)")
        purged = host.store().purge(older_than_days=args.days, account_id=only)
        log("graph-purge", "done", purged=purged, days=args.days, account=(only or "all")[:8])
        return 0
    if args.action == "compact":
        from host.ports.graph import require_admin
        from host.util.log import log

        require_admin(host.principal, "graph compact")  # a schema operation: every account's index
        if args.wait_seconds < 1:
            raise UserError(f"--wait-seconds: expected a positive number of seconds, got {args.wait_seconds}")
        labels = _labels(args.label)
        store = host.store()
        if getattr(store, "backend", "") != "neo4j":
            log("graph-compact", "done", backend=getattr(store, "backend", "?"), indexes=0, reason="no-vector-index",
                detail="the embedded store scores vectors exactly; it has no vector index to rebuild")
            return 0
        if labels:
            indexed = store.vector_indexes()
            missing = [label for label in labels if label not in indexed]
            if missing:
                raise UserError(f"--label: {', '.join(missing)}: no vector index on this database; expected one of "
                                f"{', '.join(sorted(indexed)) or '(none)'}")
        names = store.compact_vector_indexes(labels, wait_s=args.wait_seconds)
        log("graph-compact", "done", backend="neo4j", indexes=len(names),
            **({} if names else {"reason": "no-vector-index-in-use"}))
        return 0
    raise UserError(f"graph: unknown action '{args.action}'")


def commands() -> list[CliCommand]:
    return [CliCommand("graph", HELP, configure, run)]
