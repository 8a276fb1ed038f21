"""`plughost memory ingest FILE`: a text or Markdown file as a KnowledgeDocument hierarchy."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plughost import log
from plughost.plugins.memory.commands.common import print_json, read_text
from plughost.plugins.memory.writes.outcome import Call, run_with_outcome
from plughost.plugins.memory.writes.tools import perform, writer

HELP = "ingest a text or Markdown file as KnowledgeDocument / Section / Chunk nodes"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="a UTF-8 text or Markdown file")
    parser.add_argument("--title", help="document title (default: the first heading or line)")
    parser.add_argument("--format", choices=("auto", "markdown", "text"), default="auto")
    parser.add_argument("--attachment-id", help="stable source id (default: the file's resolved path, so "
                        "ingesting the file again replaces its document)")
    parser.add_argument("--scope", choices=("public", "shared", "admin"),
                        help="scope of every node (public, shared, admin)")


def run(args: argparse.Namespace, host: Any) -> int:
    content = read_text(args.file, "FILE")
    params: dict[str, Any] = {"content": content, "format": args.format}
    for key, value in (("title", args.title), ("attachmentId", args.attachment_id), ("scope", args.scope)):
        if value:
            params[key] = value
    params.setdefault("attachmentId", file_attachment_id(args.file))
    result = run_with_outcome(Call("memory-ingest", host.env), lambda c: perform(host, c, "ingest", params))
    if not args.attachment_id:
        replace_older(host, result)
    print_json(result)
    return 0


def file_attachment_id(path: Path) -> str:
    """A file's default attachmentId: its resolved path, so an edited file re-ingests in place."""
    return f"file:{path.resolve()}"


def replace_older(host: Any, result: dict[str, Any]) -> None:
    """Soft-delete the versions of this document ingested before ids followed the file: keyed by
    a hash of their content (``sha256:``), with the title the new version has. Each goes as
    ``memory-delete`` takes a node (restorable for the grace period), with one line naming it."""
    w = writer(host)
    for old in w.store.find(guards=w.guards(), labels=["KnowledgeDocument"], where={"title": result["title"]},
                            limit=100):
        if old.id == result["elementId"] or not str(old.properties.get("attachmentId", "")).startswith("sha256:"):
            continue
        run_with_outcome(Call("memory-delete", host.env), _delete(host, old.id))
        log("memory-ingest", "replaced", older=old.id, attachmentId=old.properties["attachmentId"],
            reason="same-title-content-keyed", graceDays=7)


def _delete(host: Any, node_id: str) -> Callable[[Call], Any]:
    return lambda c: perform(host, c, "delete", {"id": node_id})
