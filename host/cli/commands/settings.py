"""`plughost settings [--json|--markdown]`: every `PLUGHOST_*` setting, the host's and the plugins'."""

from __future__ import annotations

import argparse
import json
from typing import Any

from plughost.runtime import settings


def configure(parser: argparse.ArgumentParser) -> None:
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="machine-readable output")
    form.add_argument("--markdown", action="store_true", help="the table docs/configuration.md shows")


def run(args: argparse.Namespace, ctx: Any) -> int:
    rows = settings.table(ctx.host())
    if args.json:
        print(json.dumps({"settings": [d.row() for d in rows]}, indent=2))
    elif args.markdown:
        print(settings.markdown(rows), end="")
    else:
        for d in rows:
            s = d.setting
            print(f"{s.name:<34} {settings.kind(s):<22} {s.shown_default() or '-':<12} {d.plugin:<9} {s.doc}")
    return 0
