"""`plughost memory ingest FILE`: a text or Markdown file as a KnowledgeDocument hierarchy."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from plughost.plugins.memory.commands.common import print_json, read_text
from plughost.plugins.memory.writes.outcome import Call, run_with_outcome
from plughost.plugins.memory.writes.tools import perform

HELP = "ingest a text or Markdown file as KnowledgeDocument / Section / Chunk nodes"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="a UTF-8 text or Markdown file")
    parser.add_argument("--title", help="document title (default: the first heading or line)")
    parser.add_argument("--format", choices=("auto", "markdown", "text"), default="auto")
    parser.add_argument("--attachment-id", help="stable source id (default: a hash of the content)")
    parser.add_argument("--scope", choices=("public", "shared", "admin"),
                        help="scope of every node (public, shared, admin)")


def run(args: argparse.Namespace, host: Any) -> int:
    content = read_text(args.file, "FILE")
    params: dict[str, Any] = {"content": content, "format": args.format}
    for key, value in (("title", args.title), ("attachmentId", args.attachment_id), ("scope", args.scope)):
        if value:
            params[key] = value
    result = run_with_outcome(Call("memory-ingest", host.env), lambda c: perform(host, c, "ingest", params))
    print_json(result)
    return 0
