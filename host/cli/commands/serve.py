"""`plughost serve [--host 127.0.0.1] [--port 8787]`: boot (the gates), then serve the host's app.

The gates run first, exactly as in ``plughost boot`` (``plughost.runtime.boot.check_install``: same
configuration, brand, payload and config dir, so the same lines); a fatal gate refuses to serve
(exit 1).

Then one app (:mod:`plughost.serve.app`): plugin routes, channel adapters, ``/mcp/<plugin>`` over
streamable HTTP, startup/shutdown hooks; SIGTERM/SIGINT stop it gracefully (exit 0).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path
from typing import Any

from plughost.cli.listen import bind_port, port_number
from plughost.runtime import boot, state
from plughost.runtime.settings import check_values
from plughost.serve.stopping import shutdown_grace
from plughost.util import settings
from plughost.util.credentials import http_token_path
from plughost.util.errors import FatalError, UserError
from plughost.util.log import log


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=8787, help="port (default 8787; 0 picks a free one)")
    parser.add_argument("--grace", type=float, default=None,
                        help="seconds requests and running agent turns get to finish on SIGTERM/SIGINT; the rest "
                             "is left for the next start (default: PLUGHOST_SHUTDOWN_GRACE, else 10)")
    parser.add_argument("--account", default=None, help="serve as this account (sets ACCOUNT_ID)")
    parser.add_argument("--config-dir", type=Path, default=None,
                        help="Claude Code config dir the gates check and the claude runner runs in "
                             "(default: the one plughost install recorded; see docs/payload.md#install-record)")
    parser.add_argument("--brand", default=None, help="brand for the specialist strip-list (default: $PLUGHOST_BRAND)")
    parser.add_argument("--open-local", action="store_true", default=None,
                        help="development: serve /mcp/* and admin routes to loopback requests without a credential "
                             "(also PLUGHOST_OPEN_LOCAL=1); refused with a non-loopback --host")


def run_boot_gates(host: Any, env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    """Run the gates as `plughost boot` does and return the summary `/healthz` shows."""
    report = boot.check_install(host, env, account=args.account, config_dir=args.config_dir, brand=args.brand)
    rows = [{"gate": o.gate, "status": o.status, "fatal": o.fatal, "inspected": o.inspected}
            for o in report.outcomes]
    fatal = [r["gate"] for r in rows if r["fatal"] and r["status"] in ("fail", "error")]
    return {"runner": "plughost.runtime.boot", "gates": rows, "ran": True, "fatal": fatal, "ok": not fatal,
            "counts": {s: sum(r["status"] == s for r in rows) for s in ("ok", "warn", "fail", "error")}}


def urls(base: str, runtime: Any) -> list[tuple[str, str]]:
    """The URLs worth printing: health, sites, webchat (when a channel serves one) and each MCP endpoint."""
    out = [("health", f"{base}/healthz")]
    paths = [r.split(":", 1)[1] for r in runtime.routes]
    if any(p.endswith(" /sites/{path:path}") for p in paths):
        out.append(("sites", f"{base}/sites/"))
    webchat = sorted(p.split(" ", 1)[1] for p in paths if "webchat" in p and p.startswith("GET"))
    if webchat:
        out.append(("webchat", f"{base}{webchat[0]}"))
    out.extend((f"mcp {name}", f"{base}/mcp/{name}") for name in sorted(runtime.mcp))
    return out


def auth_hint(door: Any) -> str:
    """How a client reaches /mcp/* and the admin routes (printed at start; never the token itself)."""
    if door.open_local:
        return "open to loopback requests (--open-local); no credential needed"
    door.http_token  # noqa: B018  (created now, so the file exists for the client to read)
    return f"Authorization: Bearer $(cat {http_token_path(door.home, door.account_id)})"


def run(args: argparse.Namespace, ctx: Any) -> int:
    from plughost.serve import app as host_app

    ctx.env = boot.command_env(ctx.env, args.account, args.brand, args.config_dir)
    host = ctx.host()
    check_values(host)  # a set value its setting refuses: one line, exit 2, before anything starts
    if host_app.open_local_requested(host, args.open_local) and not host_app.is_loopback_bind(args.host):
        raise UserError(f"--host {args.host}: refusing a non-loopback bind while MCP and admin routes are open "
                        "(--open-local / PLUGHOST_OPEN_LOCAL=1); drop the switch to require a credential")
    summary = run_boot_gates(host, dict(ctx.env), args)
    if summary["fatal"]:
        log("serve", "op=refused", reason="fatal-gate", gates=summary["fatal"])
        raise FatalError(f"serve: refusing to serve: fatal boot gate(s) failed: {', '.join(summary['fatal'])}")
    host.state.set(state.GATES, summary)
    port = bind_port(args.host, args.port)  # busy or unusable: one line now; 0: picked at uvicorn's bind
    shown = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}.get(args.host) or (
        f"[{args.host}]" if ":" in args.host else args.host)
    app = host_app.build_app(host, bind=args.host, port=port, open_local=args.open_local)
    runtime = app.state.runtime

    def ready(_addr: str, bound: int) -> None:
        base = f"http://{shown}:{bound}"
        hint = auth_hint(app.state.door)  # the token file exists before anyone reads "serving on"
        print(f"plughost serving on {base}", flush=True)
        for label, url in urls(base, runtime):
            print(f"  {label + ':':<14} {url}", flush=True)
        print(f"  {'mcp auth:':<14} {hint}", flush=True)
        log("serve", "op=listening", url=base, mcp=sorted(runtime.mcp), routes=len(runtime.routes))

    grace = args.grace if args.grace is not None and args.grace >= 0 else shutdown_grace(host.env)
    server = host_app.make_server(host, bind=args.host, port=port, grace=grace, on_ready=ready, app=app)
    try:
        server.run()
    except SystemExit:  # uvicorn exits when binding or the lifespan startup fails
        print("plughost serve: the app failed to start (see the lines above)", file=sys.stderr)
        return 1
    finally:
        ctx._host = None  # the app's lifespan closed the host (shutdown hooks, store)
    if runtime.refused:
        print(f"plughost serve: refusing to serve: {runtime.refused}", file=sys.stderr)
        return 1
    log("serve", "op=stopped", signal=server.stop_signal or "none", requests=runtime.inflight.total)
    fast_exit()
    return 0


def fast_exit() -> None:
    """End the process now that everything is flushed and closed.

    Interpreter teardown of the web and MCP stacks (tens of thousands of objects) takes seconds
    on a busy machine and adds nothing after a graceful stop; a supervisor waiting on SIGTERM
    gets the exit at once. Only in the main thread of a `plughost serve` process, and
    ``PLUGHOST_SERVE_NO_FAST_EXIT=1`` turns it off.
    """
    if settings.SERVE_NO_FAST_EXIT.read_or_default() or threading.current_thread() is not threading.main_thread():
        return
    if "serve" not in sys.argv[1:]:
        return  # called in-process (an embedding app or a test), not as the `plughost serve` command
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
