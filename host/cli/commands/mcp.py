"""`plughost mcp serve PLUGIN [--http PORT]`: serve one plugin's tools over stdio or HTTP."""

from __future__ import annotations

import argparse
from typing import Any

from plughost.cli.listen import bind_port, port_number
from plughost.util.errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    serve = sub.add_parser("serve", help="serve one plugin's tools")
    serve.add_argument("plugin")
    serve.add_argument("--http", type=port_number, metavar="PORT", default=None,
                       help="serve streamable HTTP on 127.0.0.1:PORT at /mcp instead of stdio")
    serve.add_argument("--bind", default="127.0.0.1", help="address for --http (default 127.0.0.1)")


def run(args: argparse.Namespace, ctx: Any) -> int:
    from plughost.mcp import server as mcp_server
    host = ctx.host()
    record = host.plugin(args.plugin)
    if not record.loaded:
        raise UserError(f"plugin: '{args.plugin}' is {record.status} ({record.reason}); it serves nothing here")
    if args.http is not None:
        port = bind_port(args.bind, args.http, flag="--http", bind_flag="--bind")  # 0: picked at the bind
        mcp_server.serve_http(host, args.plugin, port=port, bind=args.bind)
    else:
        mcp_server.serve_stdio(host, args.plugin)
    return 0
