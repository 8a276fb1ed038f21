"""`plughost graph import FILE.jsonl`, `graph export`, `graph migrate --to neo4j`, `graph purge` and
`graph compact` (contributed through a hook)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from plughost import CliCommand, UserError, log
from plughost.api.accounts import check_id
from plughost.api.principals import child_env
from plughost.api.store import record_store, require_admin
from plughost.plugins.graph import IMPORT_BATCH
from plughost.plugins.graph.backend import sqlite_path
from plughost.plugins.graph.common import check_name
from plughost.plugins.graph.export import export_jsonl
from plughost.plugins.graph.migrate import CONNECTION_KEYS, migrate
from plughost.plugins.graph.neo4j_store import Neo4jStore
from plughost.plugins.graph.neo4j_store.connection import driver_settings

HELP = ("graph store maintenance: bulk import and export, migration to Neo4j, purge of soft-deleted nodes, "
        "vector index compaction")


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    imp = sub.add_parser("import", help="import nodes from a JSON-lines file into ACCOUNT_ID's graph")
    imp.add_argument("file", type=Path, help="one node per line: {id?, labels, properties, edges?}")
    imp.add_argument("--batch-size", type=int, default=None,
                     help=f"nodes per committed transaction, at most (default {IMPORT_BATCH:,}; 50,000 on Neo4j)")
    imp.add_argument("--no-progress", action="store_true", help="never draw the progress bar")
    exp = sub.add_parser("export", help="write an account's graph as import lines (every node with its edges, "
                         "embedding and times), or as neo4j-admin CSV files")
    exp.add_argument("dir", type=Path, nargs="?", default=None,
                     help="--format neo4j-admin: the folder to write nodes.csv, relationships.csv, schema.cypher into")
    exp.add_argument("--format", choices=("jsonl", "neo4j-admin"), default="jsonl",
                     help="jsonl (default): what graph import reads; neo4j-admin: CSV files for "
                          "neo4j-admin database import full")
    exp.add_argument("--account", default=None, help="the account to export (default: ACCOUNT_ID)")
    exp.add_argument("--out", type=Path, default=None, help="jsonl: the file to write (default: standard output)")
    mig = sub.add_parser("migrate", help="copy the embedded store into Neo4j (resumable), verify it, and record "
                         "Neo4j as the install's store")
    mig.add_argument("--to", required=True, choices=("neo4j",), help="the store to move to (neo4j, at NEO4J_URI)")
    mig.add_argument("--batch-size", type=int, default=5000, help="nodes per committed transaction (default 5,000)")
    mig.add_argument("--sample", type=int, default=20, help="searches compared per account (default 20)")
    mig.add_argument("--no-record", action="store_true",
                     help="copy and verify only; leave the install on the embedded store")
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
    for value in values or []:
        check_name(value, "--label")
    return list(dict.fromkeys(values)) if values else None


def run(args: argparse.Namespace, host: Any) -> int:
    if args.action == "import":
        from plughost.api.store import ImportSession
        from plughost.plugins.graph.importer import import_jsonl

        guards = ImportSession.admit(host.principal, args.file, "graph import")
        summary = import_jsonl(host.store(), args.file, guards=guards, batch_size=args.batch_size,
                               progress=False if args.no_progress else None)
        return 2 if summary.errors else 0
    if args.action == "export":
        return _export(args, host)
    if args.action == "migrate":
        return _migrate(args, host)
    if args.action == "purge":
        from plughost import log
        from plughost.api.store import require_admin

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
        from plughost import log
        from plughost.api.store import require_admin

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


def _export_account(args: argparse.Namespace, host: Any) -> str:
    """``--account`` or ACCOUNT_ID; an account's process exports only its own account."""
    own = host.principal.account
    if args.account is None:
        return str(host.principal.require_account("the id of the account to export (or --account ID)"))
    if own and args.account != own:
        raise UserError(f"--account: '{args.account}' is not this process's account (ACCOUNT_ID={own}); an account's "
                        "process exports only its own. Every account is the install operator's: ACCOUNT_ID= plughost "
                        f"graph export --account {args.account}")
    return check_id(args.account, "--account")


def _export(args: argparse.Namespace, host: Any) -> int:
    require_admin(host.principal, "graph export")  # it reads every node of the account, past any guard
    account = _export_account(args, host)
    store = host.store()
    if args.format == "neo4j-admin":
        from plughost.plugins.graph.neo4j_admin import export_neo4j_admin

        if args.dir is None:
            raise UserError("graph export --format neo4j-admin: expected DIR, the folder to write the CSV files into")
        if args.out is not None:
            raise UserError("--out: only for --format jsonl; --format neo4j-admin writes into DIR")
        export_neo4j_admin(store, account, args.dir, dimensions=int(getattr(store, "dimensions", 384)))
        return 0
    if args.dir is not None:
        raise UserError(f"{args.dir}: a folder is for --format neo4j-admin; the jsonl export writes --out FILE "
                        "(or standard output)")
    export_jsonl(store, account, args.out, sys.stdout)
    return 0


def _migrate(args: argparse.Namespace, host: Any) -> int:
    require_admin(host.principal, "graph migrate")  # it copies every account, past any guard
    if args.batch_size < 1:
        raise UserError(f"--batch-size: expected a positive integer, got {args.batch_size}")
    if args.sample < 0:
        raise UserError(f"--sample: expected a non-negative number, got {args.sample}")
    path = sqlite_path(host)
    if not path.is_file():
        raise UserError(f"{path}: no embedded store here (expected the install's graph.sqlite, or PLUGHOST_GRAPH_DB)")
    from plughost.plugins.graph.sqlite_store import SqliteStore

    uri = driver_settings(host.env)[0]  # NEO4J_URI checked before anything is read
    database = (host.env.get("NEO4J_DATABASE") or "").strip()
    source = SqliteStore(path, env=host.env)
    try:
        totals = migrate(source, lambda account: Neo4jStore.from_env(child_env(host.env, host.principal.for_account(account))),
                         home=host.home, target=f"{uri}/{database}" if database else uri, batch=args.batch_size,
                         only=host.principal.account, sample=args.sample)
    finally:
        source.close()
    if totals["mismatches"]:
        log("graph-migrate", "done", **totals, recorded="no", reason="verify-failed")
        return 2
    # the checkpoint stays (every account done): a re-run knows the data there is this install's own
    if args.no_record:
        log("graph-migrate", "done", **totals, recorded="no", reason="--no-record")
        return 0
    values = {"PLUGHOST_STORE": "neo4j"}
    values.update({k: host.env[k].strip() for k in CONNECTION_KEYS if (host.env.get(k) or "").strip()})
    env_file = record_store(host.env, values)
    log("graph-migrate", "done", **totals, recorded="neo4j", file=str(env_file),
        revert=f"PLUGHOST_STORE=sqlite in {env_file}")
    return 0


def commands() -> list[CliCommand]:
    return [CliCommand("graph", HELP, configure, run)]
