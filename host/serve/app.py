"""The host's ASGI app: every plugin's HTTP surface and MCP server in one Starlette app (docs/http.md#routes).

``build_app(host)`` assembles
- the routes of the ``plughost_routes`` hook and of every ``plughost_channel_adapters`` adapter
  (a path claimed twice is an error naming both plugins);
- each tool-serving plugin's MCP server over streamable HTTP at ``/mcp/<plugin>`` (DNS-rebinding
  protection on). One Starlette app may hold several MCP servers only if each server's
  streamable-HTTP session manager is started in *this* app's lifespan (a sub-app's own lifespan
  never runs when its routes are mounted), so the lifespan enters every ``session_manager.run()``;
- the ``plughost_startup`` hooks after the managers start, and ``host.close()`` (shutdown hooks,
  store closed) when the app stops.

``serve(host, ...)`` runs it under uvicorn with a graceful stop on SIGTERM/SIGINT: listeners
close first, requests already accepted finish (long-lived MCP event streams are ended once the
ordinary requests have drained), then the lifespan shuts down. Starlette, uvicorn and mcp are
imported here, never on the boot path.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.routing import BaseRoute, Mount
from starlette.routing import Route as StarletteRoute

from plughost.runtime import hooktable, state
from plughost.runtime.types import Route
from plughost.serve.stopping import Stop, stop_of
from plughost.util import settings
from plughost.util.errors import DuplicateNameError, PlughostError, StoreUnavailable, UserError
from plughost.util.gcpause import settle_heap
from plughost.util.log import log
from plughost.web.http import is_loopback, json_error
from plughost.web.http_timeouts import protocol_class

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.host import Host

MCP_PREFIX = "/mcp/"
_STATUS_SLUGS = {400: "bad-request", 401: "unauthorized", 403: "forbidden", 404: "not-found",
                 405: "method-not-allowed", 408: "request-timeout", 413: "payload-too-large", 415: "unsupported-media-type",
                 429: "too-many-requests"}


@dataclass
class InFlight:
    """Counts ordinary requests being served (MCP event-stream GETs excluded) for the graceful stop."""

    count: int = 0
    total: int = 0

    def is_streaming(self, scope: dict[str, Any]) -> bool:
        return scope.get("method") == "GET" and str(scope.get("path", "")).startswith(MCP_PREFIX)


@dataclass
class Runtime:
    """What the running app knows about itself: the host, its MCP mounts and in-flight requests."""

    host: Host
    mcp: dict[str, Any] = field(default_factory=dict)  # plugin -> PluginServer
    inflight: InFlight = field(default_factory=InFlight)
    routes: list[str] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    stop: Stop = field(default_factory=Stop)
    refused: str | None = None  # why a startup hook refused to serve (a FatalError), else None

    @property
    def session_managers(self) -> list[Any]:
        return [server.session_manager for server in self.mcp.values()]

    async def end_mcp_sessions(self) -> int:
        """Terminate every open MCP session so its event stream ends (shutdown only)."""
        ended = 0
        for manager in self.session_managers:
            for transport in list(getattr(manager, "_server_instances", {}).values()):
                with contextlib.suppress(Exception):
                    await transport.terminate()
                    ended += 1
        return ended


STOPPING_RETRY_AFTER = "5"


class _CountRequests:
    """ASGI middleware: keep ``Runtime.inflight`` current; once the stop began, a request that
    starts is answered 503 with ``Retry-After`` (nothing new is accepted by a stopping process)."""

    def __init__(self, app: Any, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.runtime.stop.is_set:
            await json_error(503, "stopping", "the server is stopping; send it again in a few seconds",
                             headers={"Retry-After": STOPPING_RETRY_AFTER, "Connection": "close"})(scope, receive, send)
            return
        if scope["type"] != "http" or self.runtime.inflight.is_streaming(scope):
            await self.app(scope, receive, send)
            return
        counter = self.runtime.inflight
        counter.count += 1
        counter.total += 1
        try:
            await self.app(scope, receive, send)
        finally:
            counter.count -= 1


def mcp_plugins(host: Host) -> list[str]:
    """Plugins whose tools the host serves over HTTP at ``/mcp/<plugin>``: those whose model
    (``host.surface.models``, plughost.runtime.plugin_model) has a server, the servers the generated
    ``plugin.json`` starts and the gates check, when the host holds their handlers. The others are
    left out, each with a ``[serve] op=mcp-skip`` line: ``mcp-manifest: skip`` or no server in the
    model, or no handler here (a shared-lib server running its own binary)."""
    table = host.tools()
    out = []
    for name, model in sorted(host.surface.models.items()):
        record = host.records.get(name)
        if record is None or not record.loaded or not model.tools:
            continue
        if not model.has_server:
            reason = "mcp-manifest-skip" if model.manifest is not None and model.manifest.mcp_manifest == "skip" \
                else "no-server"
            log("serve", "op=mcp-skip", plugin=name, reason=reason)
        elif not table.has_handlers(name):
            log("serve", "op=mcp-skip", plugin=name, reason="no-handler")
        else:
            out.append(name)
    return out


def _starlette_route(route: Route) -> BaseRoute:
    if route.app is not None:
        return Mount(route.path, app=route.app, name=route.name)
    if route.endpoint is None:
        raise UserError(f"route {route.path}: expected an endpoint or an app")
    return StarletteRoute(route.path, endpoint=route.endpoint, methods=list(route.methods), name=route.name)


def plugin_routes(host: Host) -> list[tuple[str, Route]]:
    """(plugin, route) from the routes hook and every channel adapter; duplicates name both plugins."""
    found: list[tuple[str, Route]] = []
    seen: dict[str, str] = {}
    contributions = [(c.plugin, c.item) for c in host.collect(hooktable.ROUTES)]
    for c in host.collect(hooktable.CHANNEL_ADAPTERS):
        contributions.extend((c.plugin, r) for r in c.item.routes)
    for plugin, route in contributions:
        if not isinstance(route, Route):
            log("plugins", "op=hook-error", plugin=plugin, hook="plughost_channel_adapters",
                reason=f"route is {type(route).__name__}, expected Route")
            continue
        keys = [route.key] if route.app is not None else [f"{m} {route.path}" for m in route.methods]
        for key in keys:
            if key in seen:
                raise DuplicateNameError(
                    f"routes: '{key}' is provided twice: by plugin '{seen[key]}' and by plugin '{plugin}'")
            seen[key] = plugin
        found.append((plugin, route))
    return found


async def _http_exception(request: Request, exc: Exception) -> Any:
    status = getattr(exc, "status_code", 500)
    detail = getattr(exc, "detail", "") or ""
    if status == 404 and detail in ("", "Not Found"):
        detail = f"no route for {request.method} {request.url.path}"
    elif status == 405 and detail in ("", "Method Not Allowed"):
        detail = f"{request.method} is not allowed on {request.url.path}"
    return json_error(status, _STATUS_SLUGS.get(status, "error"), str(detail),
                      headers=getattr(exc, "headers", None))


async def _client_gone(request: Request, exc: Exception) -> Any:
    """A client that hangs up mid-body is a client event, not a server error (no traceback)."""
    log("http", "op=client-disconnect", path=request.url.path)
    return json_error(400, "client-disconnect", "the client closed the connection before sending the whole body")


async def _plughost_error(request: Request, exc: Exception) -> Any:
    """A store that does not answer is 503; any other reported error is the request's (400).
    Handled here, not by the catch-all, so no traceback reaches the log for them."""
    log("http", "op=error", path=request.url.path, error=type(exc).__name__)
    if isinstance(exc, StoreUnavailable):
        return json_error(503, "store-unavailable", str(exc), headers={"Retry-After": "5"})
    return json_error(400, "bad-request", str(exc))


async def _server_error(request: Request, exc: Exception) -> Any:
    log("http", "op=error", path=request.url.path, error=type(exc).__name__)
    if isinstance(exc, PlughostError):
        return json_error(400, "bad-request", str(exc))
    return json_error(500, "internal", f"{type(exc).__name__} while serving {request.url.path}")


def open_local_requested(host: Host, open_local: bool | None = None) -> bool:
    """The development switch: ``--open-local`` (passed in) or ``PLUGHOST_OPEN_LOCAL=1``."""
    return bool(open_local) if open_local is not None else settings.OPEN_LOCAL.read(host.env)


def build_app(host: Host, *, bind: str = "127.0.0.1", port: int | None = None, mcp: bool = True,
              open_local: bool | None = None) -> Starlette:
    """Assemble the app; ``app.state.runtime`` is the :class:`Runtime`.

    ``open_local`` (default: ``PLUGHOST_OPEN_LOCAL``) opens MCP and admin routes to loopback
    requests without a credential (:mod:`plughost.web.http_guard`); it is refused for a non-loopback bind.
    """
    from plughost.mcp.server import build_server, http_app, quiet_library_logs
    from plughost.web.http_guard import Door, GuardMiddleware

    opened = open_local_requested(host, open_local)
    if opened and not is_loopback_bind(bind):
        raise UserError(f"--host {bind}: MCP and admin routes are open (--open-local / PLUGHOST_OPEN_LOCAL=1); "
                        "open them only on a loopback bind (127.0.0.1, ::1), or drop the switch")

    quiet_library_logs(host.env)
    runtime = Runtime(host=host, stop=stop_of(host))
    routes: list[BaseRoute] = []
    for plugin, route in plugin_routes(host):
        routes.append(_starlette_route(route))
        runtime.routes.append(f"{plugin}:{route.key}")
    if mcp:
        for plugin in mcp_plugins(host):
            try:
                server = build_server(host, plugin)
            except PlughostError as exc:
                log("serve", "op=mcp-skip", plugin=plugin, reason=str(exc))
                continue
            sub = http_app(server, path=f"{MCP_PREFIX}{plugin}", host=bind, port=port or None)
            routes.extend(sub.routes)
            runtime.mcp[plugin] = server

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        try:
            async with contextlib.AsyncExitStack() as stack:
                for manager in runtime.session_managers:
                    await stack.enter_async_context(manager.run())
                errors = await anyio.to_thread.run_sync(host.call_each, hooktable.STARTUP)
                fatal = [e for e in errors if e.fatal]
                if fatal:  # the exception to isolation: a startup check that must refuse to serve
                    runtime.refused = f"plugin '{fatal[0].plugin}': {fatal[0].reason}"
                    log("serve", "op=refused", reason="fatal-startup", plugin=fatal[0].plugin, detail=fatal[0].reason)
                yield
                await runtime.end_mcp_sessions()
        finally:
            await anyio.to_thread.run_sync(host.close)
            log("serve", "op=closed", requests=runtime.inflight.total)

    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: _http_exception, ClientDisconnect: _client_gone,
                                        PlughostError: _plughost_error, Exception: _server_error})
    app.state.runtime = runtime
    host.state.set(state.RUNTIME, runtime)
    principal = host.principal  # resolved once, where HTTP calls enter; every request carries it
    door = Door(home=host.home, account_id=principal.account, open_local=opened,
                default_max_body=settings.HTTP_MAX_BODY.read(host.env), principal=principal,
                body_timeout=settings.HTTP_BODY_TIMEOUT.read(host.env))
    app.add_middleware(GuardMiddleware, door=door)
    app.add_middleware(_CountRequests, runtime=runtime)
    app.state.door = door
    return app


def is_loopback_bind(bind: str) -> bool:
    """Whether a listen address only accepts loopback connections (``localhost`` counts)."""
    return bind.strip().lower() == "localhost" or is_loopback(bind)


def _uvicorn_server_class() -> type:
    import uvicorn

    class PlughostServer(uvicorn.Server):
        """uvicorn with plughost's stop: drain ordinary requests, end MCP streams, no signal re-raise."""

        def __init__(self, config: Any, runtime: Runtime, grace: float,
                     on_ready: Callable[[str, int], None] | None) -> None:
            super().__init__(config)
            self.runtime = runtime
            self.grace = grace
            self.on_ready = on_ready
            self.stop_signal: str | None = None
            self.bound: tuple[str, int] | None = None
            self.loop: asyncio.AbstractEventLoop | None = None

        def handle_exit(self, sig: int, _frame: Any) -> None:
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True
            self.should_exit = True
            self.stop_signal = signal.Signals(sig).name
            # from now on requests are refused and running work has until the deadline
            self.runtime.stop.begin(self.grace, self.stop_signal, self.loop)

        async def startup(self, sockets: Any = None) -> None:
            self.loop = asyncio.get_running_loop()
            await super().startup(sockets=sockets)
            if self.runtime.refused:
                self.should_exit = True  # stop at once (shutdown still runs: hooks, store close)
                return
            if self.servers and self.servers[0].sockets:
                addr = self.servers[0].sockets[0].getsockname()
                self.bound = (addr[0], addr[1])
                from plughost.mcp.server import allow_only_port

                for server in self.runtime.mcp.values():  # --port 0: the port is known only now
                    allow_only_port(server, addr[1])
                if self.on_ready:
                    self.on_ready(addr[0], addr[1])

        async def shutdown(self, sockets: Any = None) -> None:
            """One deadline for the whole stop (``grace`` from the signal): requests drain, plugins'
            work winds down (their ``on_stop`` listeners) and the lifespan ends within it."""
            stop = self.runtime.stop
            stop.begin(self.grace, self.stop_signal or "none", asyncio.get_running_loop())
            log("serve", "op=stopping", signal=self.stop_signal or "none",
                inflight=self.runtime.inflight.count, grace=f"{stop.grace:g}")
            for server in self.servers:
                server.close()
            for connection in list(self.server_state.connections):
                connection.shutdown()
            while self.runtime.inflight.count > 0 and stop.remaining() > 0 and not self.force_exit:
                await asyncio.sleep(0.02)
            await self.runtime.end_mcp_sessions()
            self.config.timeout_graceful_shutdown = max(0.5, stop.remaining())  # type: ignore[assignment]
            await super().shutdown(sockets=sockets)

    return PlughostServer


def make_server(host: Host, *, bind: str = "127.0.0.1", port: int = 8787, grace: float = 10.0,
                on_ready: Callable[[str, int], None] | None = None, app: Starlette | None = None,
                open_local: bool | None = None) -> Any:
    """A configured (not yet running) uvicorn server for the host's app."""
    import uvicorn

    app = app or build_app(host, bind=bind, port=port, open_local=open_local)
    header_timeout = settings.HTTP_HEADER_TIMEOUT.read(host.env)
    config = uvicorn.Config(app, host=bind, port=port, log_level="warning", access_log=False, lifespan="on",
                            proxy_headers=False, server_header=False, http=protocol_class(header_timeout),
                            limit_concurrency=settings.HTTP_MAX_CONNECTIONS.read(host.env),
                            timeout_graceful_shutdown=grace)  # type: ignore[arg-type]  # a float works
    return _uvicorn_server_class()(config, app.state.runtime, grace, on_ready)


def serve(host: Host, *, bind: str = "127.0.0.1", port: int = 8787, grace: float = 10.0,
          on_ready: Callable[[str, int], None] | None = None) -> str | None:
    """Serve until SIGTERM/SIGINT; returns the signal's name (None when stopped otherwise)."""
    server = make_server(host, bind=bind, port=port, grace=grace, on_ready=on_ready)
    settle_heap()
    server.run()
    return server.stop_signal
