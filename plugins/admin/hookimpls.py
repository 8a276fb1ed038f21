"""Hook implementations of the admin plugin: its HTTP routes and the `plughost admin` command.

Kept cheap to import: the route modules (Starlette, anyio) load inside the hooks, which fire
only when ``plughost serve`` assembles the app or the ``admin`` command runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plughost import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from plughost import CliCommand, Host, Route, Setting, Tool


@hookimpl
def plughost_routes(host: Host) -> list[Route]:
    from plughost import Route
    from plughost.api.http import per_address
    from plughost.plugins.admin import health, logingest, session_routes, sites
    from plughost.plugins.admin.settings import RATE_LOG_INGEST, RATE_PIN_ADDRESS

    def home_of():
        return host.home

    sites_endpoint = sites.make_endpoint(home_of)
    def account_of():
        return host.principal.account

    from plughost.plugins.admin.console import pages

    login = session_routes.PinLogin(home_of, account_of)
    mint, check = session_routes.make_endpoints(home_of, account_of, login)
    # per client address, before any body is read
    mint = per_address(host, RATE_PIN_ADDRESS, mint, "too many PIN attempts from this address; try again in a minute")
    ingest = per_address(host, RATE_LOG_INGEST, logingest.log_ingest,
                         "too many log lines from this address; send them in batches ({\"lines\": [...]})")
    from plughost.plugins.admin import owner_sessions

    list_sessions, start_session, change_session = owner_sessions.make_endpoints(host)
    return [
        Route("/api/admin/sessions", endpoint=list_sessions, methods=("GET",), name="admin-sessions"),
        Route("/api/admin/sessions", endpoint=start_session, methods=("POST",), name="admin-sessions-start"),
        Route("/api/admin/sessions/{conversation}/{action}", endpoint=change_session, methods=("POST",),
              name="admin-sessions-change"),
        *[Route(r.path, endpoint=per_address(host, RATE_PIN_ADDRESS, r.endpoint, "too many PIN attempts from this "
                                                                    "address; try again in a minute"),
                methods=r.methods, name=r.name) if r.name == "console-login-post" else r
          for r in pages.make_routes(host, login)],
        Route("/api/admin/log-ingest", endpoint=ingest, methods=("POST",), name="admin-log-ingest"),
        Route("/api/admin/session", endpoint=mint, methods=("POST",), name="admin-session-mint"),
        Route("/api/admin/session", endpoint=check, methods=("GET",), name="admin-session-check"),
        Route("/healthz", endpoint=health.make_endpoint(host), methods=("GET",), name="healthz"),
        Route("/sites", endpoint=sites_endpoint, methods=("GET",), name="sites-root"),
        Route("/sites/{path:path}", endpoint=sites_endpoint, methods=("GET",), name="sites"),
    ]


@hookimpl
def plughost_cli_commands(host: Host) -> list[CliCommand]:
    from plughost import CliCommand
    from plughost.plugins.admin import cli

    return [CliCommand("admin", cli.HELP, cli.configure, cli.run)]


@hookimpl
def plughost_settings() -> list[Setting]:
    from plughost.plugins.admin.settings import ALL

    return list(ALL)


@hookimpl
def plughost_tools(host: Host) -> list[Tool]:
    """``public-hostname`` and ``admin-hostname`` (declared in PLUGIN.md)."""
    from plughost.plugins.admin.hostnames import hostname_tools

    return hostname_tools(host)
