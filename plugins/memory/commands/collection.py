"""`plughost memory collection add|sync|list|remove`: folders of Markdown notes kept in the graph."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from plughost import UserError
from plughost.api.store import can_change, require_admin
from plughost.plugins.memory.collections import registry, service
from plughost.plugins.memory.collections.removal import remove as remove_collection
from plughost.plugins.memory.collections.state import State
from plughost.plugins.memory.commands.common import account, print_json

HELP = "folder collections: register a notes folder, sync it incrementally, list them"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="collection_action", metavar="ACTION", required=True)
    add = sub.add_parser("add", help="register a folder (NAME PATH) and sync it (admin only)")
    add.add_argument("name", metavar="NAME")
    add.add_argument("path", metavar="PATH", help="the notes folder (not /, ~ itself, a system folder or PLUGHOST_HOME)")
    add.add_argument("--pattern", help="glob of the files to index, relative to PATH (default: the source's, **/*.md and **/*.markdown)")
    add.add_argument("--source", default="markdown", help="collection source (default markdown)")
    add.add_argument("--scope", choices=("public", "shared", "admin"), help="scope every note gets (default admin: private; --scope public publishes "
                                     "the notes to every scope, e.g. a public webchat)")
    add.add_argument("--agent", action="append", default=[], help="agent tag every note gets (repeatable)")
    add.add_argument("--replace", action="store_true", help="re-point an existing collection NAME at PATH")
    add.add_argument("--no-sync", action="store_true",
                     help="register only: nothing is indexed (not by serve's watcher either) until "
                          "`collection sync NAME`")
    add.add_argument("--no-embed", action="store_true", help="sync without embeddings (reindex later)")
    sync = sub.add_parser("sync", help="sync one collection (or all) incrementally (admin only)")
    sync.add_argument("name", metavar="NAME", nargs="?")
    sync.add_argument("--no-embed", action="store_true", help="sync without embeddings (reindex later)")
    sync.add_argument("--json", action="store_true")
    sync.add_argument("--allow-empty", action="store_true",
                      help="let a folder where no file matches any more delete its notes (refused by default)")
    listing = sub.add_parser("list", help="the registered collections this process may read, and their notes")
    listing.add_argument("--json", action="store_true")
    remove = sub.add_parser("remove", help="unregister a collection, stop its sync, soft-delete its notes "
                                           "(admin only)")
    remove.add_argument("name", metavar="NAME")


def _print_stats(name: str, stats: Any, coll: Any = None) -> None:
    if stats.cancelled:
        print(f"{name}: sync stopped ({stats.cancelled}) after scanning {stats.scanned} file(s)")
        return
    print(f"{name}: scanned={stats.scanned} new={stats.new} changed={stats.changed} renamed={stats.renamed} "
          f"deleted={stats.deleted} unchanged={stats.unchanged} skipped={stats.skipped} failed={stats.failed} "
          f"links+={stats.edges_added} links-={stats.edges_removed} embedded={stats.embedded} "
          f"seconds={stats.ms / 1000:.2f}")
    for error in stats.errors[:10]:
        print(f"  skipped {error}")
    for warning in stats.warnings[:10]:
        print(f"  warning {warning}")
    if stats.scanned == 0 and coll is not None:
        print(f"  hint: no file under {coll.path} matches {coll.pattern or 'the default **/*.md, **/*.markdown'}"
              " (check --pattern)")


def _add(args: argparse.Namespace, host: Any, acct: str) -> None:
    service.source(host, args.source)
    old = registry.load(host.home, acct).get(args.name) if args.replace else None
    coll = registry.add(host.home, acct, args.name, args.path, pattern=args.pattern, source=args.source,
                        scope=args.scope, agents=args.agent, replace=args.replace, registered_only=args.no_sync)
    print(f"collection {coll.name}: {coll.path} (pattern {coll.pattern or 'default'}, scope {coll.scope}"
          f"{'' if args.scope else ' (the default: private)'})")
    retag = (old is not None and not old.registered_only
             and (old.scope, sorted(old.agents)) != (coll.scope, sorted(coll.agents)))
    if args.no_sync and retag and old is not None:  # its stored notes carry the old tags: leaving them would publish or hide wrongly
        print(f"scope or agents changed (was scope {old.scope}): its stored notes are re-tagged now "
              "(--no-sync only defers indexing a new collection)")
    if args.no_sync and not retag:
        print(f"registered only: run `plughost memory collection sync {coll.name}` to index it")
    else:
        for name, stats in service.sync_named(host, [coll.name], embed=not args.no_embed).items():
            _print_stats(name, stats, coll)


def _sync(args: argparse.Namespace, host: Any, acct: str) -> None:
    result = service.sync_named(host, [args.name] if args.name is not None else None, embed=not args.no_embed,
                                allow_empty=args.allow_empty)
    if args.json:
        print_json({n: s.as_json() for n, s in result.items()})
        return
    known = registry.load(host.home, acct)
    for name, stats in result.items():
        _print_stats(name, stats, known.get(name))
    if not result:
        print("no collections registered (plughost memory collection add NAME PATH)")


def _notes(host: Any, acct: str, name: str) -> int:
    path = registry.state_path(host.home, acct, name)
    if not path.exists():
        return 0
    state = State(path)
    try:
        return len(state.notes())
    finally:
        state.close()


def _list(args: argparse.Namespace, host: Any, acct: str) -> None:
    guards = host.principal.guards
    rows = [{**coll.as_json(), "notes": _notes(host, acct, coll.name)}
            for coll in registry.load(host.home, acct).values()
            # a collection whose notes are outside this process's guards: so are its folder and name
            if can_change(guards, {"scope": coll.scope, "agents": coll.agents})]
    if args.json:
        print_json(rows)
        return
    for r in rows:
        print(f"{r['name']}\t{r['notes']} notes\t{r['path']}\tpattern={r['pattern'] or 'default'}"
              f"\tscope={r['scope']}\tagents={','.join(r['agents']) or '-'}"
              f"{'  (registered only)' if r['registeredOnly'] else ''}")
    if not rows:  # a narrowed process is not told whether collections outside its guards exist
        print("no collections within this process's scopes and agent" if guards.narrowed
              else "no collections registered")


def _remove(args: argparse.Namespace, host: Any, acct: str) -> None:
    removed = remove_collection(host, acct, args.name)
    print(f"collection {args.name} removed; {removed} document(s) soft-deleted")


ACTIONS: dict[str, Callable[[argparse.Namespace, Any, str], None]] = {
    "add": _add, "sync": _sync, "list": _list, "remove": _remove}


def run(args: argparse.Namespace, host: Any) -> int:
    acct = account(host)
    action = args.collection_action
    if action in ("add", "remove", "sync"):
        require_admin(host.principal, f"collection {action}")  # the registry and its scopes are account-wide
    if action not in ACTIONS:
        raise UserError(f"collection: unknown action {action!r}")
    ACTIONS[action](args, host, acct)
    return 0
