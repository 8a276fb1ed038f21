"""`plughost memory collection add|sync|list|remove`: folders of Markdown notes kept in the graph."""

from __future__ import annotations

import argparse
from typing import Any

from host.errors import UserError
from plugins.memory.commands.common import account, print_json

HELP = "folder collections: register a notes folder, sync it incrementally, list them"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="collection_action", metavar="ACTION", required=True)
    add = sub.add_parser("add", help="register a folder (NAME PATH) and sync it")
    add.add_argument("name", metavar="NAME")
    add.add_argument("path", metavar="PATH")
    add.add_argument("--pattern", help="glob of the files to index, relative to PATH (default: the source's, **/*.md)")
    add.add_argument("--source", default="markdown", help="collection source (default markdown)")
    add.add_argument("--scope", help="scope every note gets (public, shared, admin ...)")
    add.add_argument("--agent", action="append", default=[], help="agent tag every note gets (repeatable)")
    add.add_argument("--no-sync", action="store_true", help="register only")
    add.add_argument("--no-embed", action="store_true", help="sync without embeddings (reindex later)")
    sync = sub.add_parser("sync", help="sync one collection (or all) incrementally")
    sync.add_argument("name", metavar="NAME", nargs="?")
    sync.add_argument("--no-embed", action="store_true", help="sync without embeddings (reindex later)")
    sync.add_argument("--json", action="store_true")
    listing = sub.add_parser("list", help="the registered collections and their notes")
    listing.add_argument("--json", action="store_true")
    remove = sub.add_parser("remove", help="unregister a collection and soft-delete its notes")
    remove.add_argument("name", metavar="NAME")


def _print_stats(name: str, stats: Any) -> None:
    print(f"{name}: scanned={stats.scanned} new={stats.new} changed={stats.changed} renamed={stats.renamed} "
          f"deleted={stats.deleted} unchanged={stats.unchanged} failed={stats.failed} "
          f"links+={stats.edges_added} links-={stats.edges_removed} embedded={stats.embedded} "
          f"seconds={stats.ms / 1000:.2f}")
    for error in stats.errors[:10]:
        print(f"  skipped {error}")


def run(args: argparse.Namespace, host: Any) -> int:
    from plugins.memory.collections import registry, service

    acct = account(host)
    action = args.collection_action
    if action == "add":
        service.source(host, args.source)
        coll = registry.add(host.home, acct, args.name, args.path, pattern=args.pattern, source=args.source,
                            scope=args.scope, agents=args.agent)
        print(f"collection {coll.name}: {coll.path} (pattern {coll.pattern or 'default'}, scope {coll.scope or '-'})")
        if not args.no_sync:
            for name, stats in service.sync_named(host, [coll.name], embed=not args.no_embed).items():
                _print_stats(name, stats)
        return 0
    if action == "sync":
        result = service.sync_named(host, [args.name] if args.name else None, embed=not args.no_embed)
        if args.json:
            print_json({n: s.as_json() for n, s in result.items()})
        else:
            for name, stats in result.items():
                _print_stats(name, stats)
            if not result:
                print("no collections registered (plughost memory collection add NAME PATH)")
        return 0
    if action == "list":
        from plugins.memory.collections.state import State

        rows = []
        for coll in registry.load(host.home, acct).values():
            path = registry.state_path(host.home, acct, coll.name)
            notes = len(State(path).notes()) if path.exists() else 0
            rows.append({**coll.as_json(), "notes": notes})
        if args.json:
            print_json(rows)
        else:
            for r in rows:
                print(f"{r['name']}\t{r['notes']} notes\t{r['path']}\tpattern={r['pattern'] or 'default'}"
                      f"\tscope={r['scope'] or '-'}\tagents={','.join(r['agents']) or '-'}")
            if not rows:
                print("no collections registered")
        return 0
    if action == "remove":
        from host.graph import Guards
        from plugins.memory.collections.state import State

        known = registry.load(host.home, acct)
        if args.name not in known:
            raise UserError(f"NAME: no collection '{args.name}' for account '{acct}'")
        path = registry.state_path(host.home, acct, args.name)
        removed = 0
        if path.exists():
            state = State(path)
            guards = Guards.from_env(host.env)
            for note in state.notes().values():
                removed += bool(host.store().soft_delete(note.doc_id, guards=guards))
            state.close()
            path.unlink()
        del known[args.name]
        registry.save(host.home, acct, known)
        print(f"collection {args.name} removed; {removed} document(s) soft-deleted")
        return 0
    raise UserError(f"collection: unknown action {action!r}")
