"""Hook implementations of the admin plugin: its HTTP routes and the `plughost admin` command.

Kept cheap to import: the route modules (Starlette, anyio) load inside the hooks, which fire
only when ``plughost serve`` assembles the app or the ``admin`` command runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from host.hookspecs import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from host.manager import Host
    from host.types import CliCommand, Route


@hookimpl
def plughost_routes(host: Host) -> list[Route]:
    from host.types import Route
    from plugins.admin import health, logingest, session_routes, sites

    def home_of():
        return host.home

    sites_endpoint = sites.make_endpoint(home_of)
    def account_of():
        return host.principal.account

    mint, check = session_routes.make_endpoints(home_of, account_of)
    return [
        Route("/api/admin/log-ingest", endpoint=logingest.log_ingest, methods=("POST",), name="admin-log-ingest"),
        Route("/api/admin/session", endpoint=mint, methods=("POST",), name="admin-session-mint"),
        Route("/api/admin/session", endpoint=check, methods=("GET",), name="admin-session-check"),
        Route("/healthz", endpoint=health.make_endpoint(host), methods=("GET",), name="healthz"),
        Route("/sites", endpoint=sites_endpoint, methods=("GET",), name="sites-root"),
        Route("/sites/{path:path}", endpoint=sites_endpoint, methods=("GET",), name="sites"),
    ]


@hookimpl
def plughost_cli_commands(host: Host) -> list[CliCommand]:
    from host.types import CliCommand
    from plugins.admin import cli

    return [CliCommand("admin", cli.HELP, cli.configure, cli.run)]
