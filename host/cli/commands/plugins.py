"""`plughost plugins list [--json]`: every plugin found, with its source, status and reason, and the
capabilities it provides and needs (PLUGIN.md ``provides``/``needs``, or the code's ``PROVIDES``/``NEEDS``).
An install whose brand cannot be read (a moved payload) gets one warn line on stderr naming the fix:
what the brand would exclude is listed as loaded, as it loads."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from plughost.runtime.install_brand import unread_warning


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="list every plugin found")
    ls.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace, ctx: Any) -> int:
    host = ctx.host()
    table = host.tools()
    rows = []
    for record in sorted(host.records.values(), key=lambda r: r.name):
        row = record.describe()
        if record.loaded and table.has_handlers(record.name):  # what the host really serves
            row["tools"] = sorted(table.served.get(record.name, {}))
        row["toolProblems"] = [p.line() for p in table.problems_of(record.name)]
        rows.append(row)
    warning = unread_warning(host.env, host.plugins_dir, "plugins")
    if warning:
        print(warning, file=sys.stderr)
    if args.json:
        print(json.dumps({"plugins": rows}, indent=2))
        return 0
    for row in rows:
        tools = ",".join(row["tools"]) or "-"
        line = (f"{row['name']:<20} {row['status']:<9} {row['source']:<12} {row['version'] or '-':<8} "
                f"{row['surface'] or '-':<9} tools={tools} provides={','.join(row['provides']) or '-'} "
                f"needs={','.join(row['needs']) or '-'}")
        if row["reason"]:
            line += f"  reason: {row['reason']}"
        for problem in row["toolProblems"]:
            line += f"  problem: {problem}"
        print(line)
    return 0
