"""`plughost doctor [--config-dir DIR] [--json]`: start every installed MCP server as Claude Code
would and compare its `tools/list` with the declared surface (docs/gates.md#doctor)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from plughost.payload import doctor
from plughost.payload.registration import config_dir
from plughost.util import config
from plughost.util.errors import PlughostError, UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config-dir", type=Path, default=None, metavar="DIR",
                        help="Claude Code config dir (default: the one plughost install recorded; see docs/payload.md#install-record)")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="S",
                        help="seconds each server gets to answer initialize and tools/list (default 30)")
    parser.add_argument("--json", action="store_true", help="print a JSON report on stdout")


def run(args: argparse.Namespace, ctx: Any) -> int:
    folder = config_dir(ctx.env, args.config_dir)
    if not folder.is_dir():
        raise UserError(f"--config-dir: '{folder}' is not a folder (no Claude Code config dir to check)")
    if args.timeout <= 0:
        raise UserError(f"--timeout: expected a positive number of seconds, got {args.timeout}")
    report = doctor.run(folder, home=ctx.env.get("HOME"), timeout=args.timeout, models=_models(ctx),
                        plughost_home=config.home(ctx.env))
    doctor.record(config.home(ctx.env), report)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        for line in report.lines():
            print(line, flush=True)
    return report.exit_code


def _models(ctx: Any) -> Any:
    """The plugin models of the host this install loads (what the gates read); None when it cannot load
    (doctor then reads each plugin from the folder Claude Code starts it from, and still runs)."""
    try:
        return ctx.host().surface.models
    except PlughostError:
        return None
