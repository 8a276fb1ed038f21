"""`plughost memory <subcommand>`: one top-level command whose subcommands come from a table.

Each entry names a module with ``HELP``, ``configure(parser)`` and ``run(args, host) -> int``;
a module is imported only when its subcommand runs (or for ``--help``). Adding a subcommand
is one line here.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from plughost import CliCommand

HELP = "memory graph: write, ingest, bulk import and reindex embeddings"

SUBCOMMANDS: dict[str, str] = {
    "write": "plughost.plugins.memory.commands.write",
    "ingest": "plughost.plugins.memory.commands.ingest",
    "import": "plughost.plugins.memory.commands.bulk_import",
    "import-archive": "plughost.plugins.memory.commands.import_archive",
    "reindex": "plughost.plugins.memory.commands.reindex",
    "audit": "plughost.plugins.memory.commands.audit",
    "search": "plughost.plugins.memory.retrieval.cli",
    "collection": "plughost.plugins.memory.commands.collection",
    "recall": "plughost.plugins.memory.commands.recall",
    "work-time": "plughost.plugins.memory.commands.worktime",
}
"""Subcommand name → module (``HELP``, ``configure``, ``run``)."""


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="memory_action", metavar="ACTION", required=True)
    for name, module_name in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(p)
        p.set_defaults(_memory_run=module.run)


def run(args: argparse.Namespace, host: Any) -> int:
    return int(args._memory_run(args, host) or 0)


def commands() -> list[CliCommand]:
    return [CliCommand("memory", HELP, configure, run)]
