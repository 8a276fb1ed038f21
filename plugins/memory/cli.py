"""`plughost memory <subcommand>`: one top-level command dispatching to a table of subcommands."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from host.types import CliCommand

if TYPE_CHECKING:  # pragma: no cover
    from host.manager import Host


def memory_command(table: Mapping[str, str]) -> CliCommand:
    """The ``memory`` command; each subcommand module has ``HELP``, ``configure`` and ``run(args, host)``."""

    def configure(parser: argparse.ArgumentParser) -> None:
        subs = parser.add_subparsers(dest="memory_command", metavar="SUBCOMMAND")
        for name, module_name in table.items():
            module = importlib.import_module(module_name)
            sub = subs.add_parser(name, help=module.HELP, description=module.HELP)
            module.configure(sub)
            sub.set_defaults(_memory_run=module.run)

    def run(args: argparse.Namespace, host: Host) -> int:
        handler = getattr(args, "_memory_run", None)
        if handler is None:
            from host.errors import UserError

            raise UserError(f"memory: expected a subcommand ({', '.join(table)})")
        return int(handler(args, host) or 0)

    return CliCommand("memory", "memory: " + ", ".join(table), configure, run)
