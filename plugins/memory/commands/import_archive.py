"""`plughost memory import-archive PATH`: a chat or mail archive as Conversations (docs/memory.md#importing-archives).

The archive is read and parsed here; its threads are written through the one import pipeline
(:class:`plughost.api.store.ImportSession`: the admin checks, the skip lines, the progress bar and
the ``done`` line), as ``memory import`` writes JSON lines."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from plughost.api.store import ImportSession
from plughost.plugins.memory.archives.model import mark_owner
from plughost.plugins.memory.archives.sources import load
from plughost.plugins.memory.archives.write import BATCH_MESSAGES, Writer, batches
from plughost.plugins.memory.commands.common import account
from plughost.plugins.memory.embedding.provider import check_dimensions
from plughost.plugins.memory.settings import IMPORT_MAX_BYTES

HELP = "import a Claude or ChatGPT export, a WhatsApp chat export, an mbox or a folder of .eml as conversations"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, help="the export: a file, a folder or the .zip as downloaded")
    parser.add_argument("--format", choices=("auto", "claude", "chatgpt", "whatsapp", "mbox", "eml"), default="auto",
                        help="what it is (default: sniffed from the files)")
    parser.add_argument("--scope", choices=("admin", "public"), default="admin",
                        help="scope of new conversations (default admin: private to the owner)")
    parser.add_argument("--me", action="append", default=[], metavar="NAME",
                        help="your name or address as the archive shows it (repeatable): your own messages "
                             "(default: found when the archive says)")
    parser.add_argument("--dry-run", action="store_true", help="read and count; write nothing")
    parser.add_argument("--no-embed", action="store_true", help="store without embeddings (reindex later)")
    parser.add_argument("--no-progress", action="store_true", help="never draw the progress bar")


def run(args: argparse.Namespace, host: Any) -> int:
    account(host)  # a one-line error naming ACCOUNT_ID when it is unset
    guards = ImportSession.admit(host.principal, args.path, "memory import-archive", file_problem=None)  # load() reports the path
    fmt, parsed = load(args.path, args.format, progress=False if args.no_progress else None,
                       max_bytes=IMPORT_MAX_BYTES.read(host.env))
    owner_known = mark_owner(fmt, parsed, args.me)
    store = host.store()
    embedder = None if args.no_embed or args.dry_run else host.embedder()
    if embedder is not None:
        check_dimensions(store, embedder)
    writer = Writer(store, embedder, guards, fmt, dry_run=args.dry_run, env=host.env, owner_known=owner_known)
    session = ImportSession(args.path, guards=guards, tag="import-archive", batch_size=BATCH_MESSAGES,
                            progress=False if args.no_progress else None, unit="messages",
                            total=sum(len(t.turns) for t in parsed.threads))
    session.run(writer, source=batches(guards.account_id, fmt, parsed, args.scope, BATCH_MESSAGES))
    summary = writer.summary
    summary.skipped = session.summary.skipped
    print(summary.line(args.dry_run))
    if not owner_known and parsed.threads:
        print("[import-archive] note: which messages are yours was not recognised; every sender is stored as a "
              "contact (run again with --me 'YOUR NAME' to mark yours)")
    session.done(format=fmt, conversations=summary.conversations, messages=summary.messages, new=summary.new,
                 updated=summary.updated, unchanged=summary.unchanged, embedded=summary.embedded,
                 dryRun=int(args.dry_run))
    return 2 if session.summary.errors else 0
