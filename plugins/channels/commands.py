"""CLI commands the channels plugin adds: ``record-turn``, ``channels``, ``schedule``."""

from __future__ import annotations

import argparse
from typing import Any

from host.types import CliCommand


def _configure_record_turn(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "Reads the Claude Code Stop-hook JSON on stdin; always exits 0."


def _run_record_turn(args: argparse.Namespace, host: Any) -> int:
    from plugins.channels.turn_recorder import cli_run

    return cli_run(host)


def cli_commands() -> list[CliCommand]:
    return [
        CliCommand("record-turn", "record the finished admin turn (Claude Code Stop hook)",
                   _configure_record_turn, _run_record_turn),
    ]
