"""The MCP server builder: one plugin's tools served with the `mcp` SDK's ``MCPServer``.

The tools come from two places: PLUGIN.md declares them (name, description, admin allowlist,
eager, input schema) and the ``plughost_tools`` hook supplies the handlers. Arguments are
validated against the JSON Schema before the handler runs; a bad argument or a raising handler
becomes an ``isError`` result with a one-line message, never a crashed server; an unknown tool is
a JSON-RPC error (-32602), as the protocol says. Eager tools carry
``_meta["anthropic/alwaysLoad"] = true`` in ``tools/list``.

A server advertises only what it serves: tools. The SDK's ``MCPServer`` registers empty prompt
and resource handlers (and ``subscriptions/listen``) on every server, which would advertise the
``prompts`` and ``resources`` capabilities with nothing behind them; they are unregistered, so
``initialize`` offers ``tools`` alone and ``prompts/*`` / ``resources/*`` are "method not found"
(-32601). The tool list never changes while a server runs, so ``listChanged`` is false. A
declared tool withheld in this configuration (e.g. the Cypher tools on the embedded store) is
named in the ``tools/list`` result's ``_meta["plughost/withheld"]``, so ``plughost doctor`` can
tell it from a tool lost in code.

``mcp`` is imported here only, never on the boot path.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, ListToolsResult, PaginatedRequestParams, TextContent
from mcp_types import Tool as MCPTool

from plughost.runtime import hooktable
from plughost.runtime.tooltable import ServedTool, checked_call, render, served_tools
from plughost.util import config, settings
from plughost.util.errors import AccountUnset, PlughostError, UserError
from plughost.util.gcpause import settle_heap
from plughost.util.log import log
from plughost.web.http import is_loopback

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.host import Host

EAGER_META_KEY = "anthropic/alwaysLoad"
WITHHELD_META_KEY = "plughost/withheld"
UNSERVED_METHODS = ("prompts/list", "prompts/get", "resources/list", "resources/read", "resources/templates/list",
                    "resources/subscribe", "resources/unsubscribe", "subscriptions/listen")
"""Requests the SDK would answer with empty lists; capabilities are derived from the handlers left."""
__all__ = ["EAGER_META_KEY", "PluginServer", "build_server", "http_app", "run_plugin_server", "serve_http",
           "serve_stdio", "served_tools"]


class PluginServer(MCPServer):
    """An MCPServer whose tool list and calls come from plughost's tool table."""

    def __init__(self, plugin: str, tools: list[ServedTool], version: str = "", host: Host | None = None,
                 withheld: list[str] | None = None) -> None:
        super().__init__(name=plugin, version=version, subscriptions=False)
        handlers = self._lowlevel_server._request_handlers
        for method in UNSERVED_METHODS:
            handlers.pop(method, None)
        self._lowlevel_server.add_request_handler("tools/list", PaginatedRequestParams, self._tools_list)
        self.plugin = plugin
        self.tools = {t.name: t for t in tools}
        self.withheld = sorted(withheld or [])
        self.host = host  # set: plughost_tool_called fires after each call
        self._after: Any = None  # the one thread plughost_tool_called runs on, off the reply path

    async def _tools_list(self, ctx: Any, params: Any) -> ListToolsResult:
        meta = {WITHHELD_META_KEY: self.withheld} if self.withheld else None
        return ListToolsResult(tools=await self.list_tools(), _meta=meta)

    async def list_tools(self) -> list[MCPTool]:
        return [
            MCPTool(
                name=t.name,
                description=t.description,
                input_schema=t.schema,
                _meta={EAGER_META_KEY: True} if t.eager else None,
            )
            for t in self.tools.values()
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:
        if name not in self.tools:  # a protocol error, not a tool result (MCP: unknown tool -> -32602)
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}",
                           data={"tools": sorted(self.tools)})
        started = _now_iso()
        result = await call_served_tool(self.plugin, self.tools, name, arguments,
                                        env=self.host.env if self.host is not None else None)
        if self.host is not None:  # after the reply, in call order: the reply does not wait for the audit
            if self._after is None:
                from concurrent.futures import ThreadPoolExecutor

                self._after = ThreadPoolExecutor(1, thread_name_prefix="plughost-tool-called")
            self._after.submit(self._called, name, dict(arguments or {}), result, started)
        return result

    def drain(self) -> None:
        """Wait for the ``plughost_tool_called`` calls still queued (before ``host.close()``)."""
        if self._after is not None:
            self._after.shutdown(wait=True)
            self._after = None

    def _called(self, name: str, arguments: Any, result: CallToolResult, started: str) -> None:
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        try:
            errors = self.host.call_each(hooktable.TOOL_CALLED, plugin=self.plugin, tool=name,  # type: ignore[union-attr]
                                         arguments=dict(arguments or {}), result=text,
                                         is_error=bool(result.is_error), started_at=started, completed_at=_now_iso())
        except Exception as exc:  # an audit failure never changes the call's result
            log("mcp", "op=tool-called-failed", plugin=self.plugin, tool=name, error=type(exc).__name__)
            return
        for err in errors:
            log("mcp", "op=tool-called-failed", plugin=self.plugin, tool=name, error=err.reason[:120])


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


async def call_served_tool(plugin: str, tools: Mapping[str, ServedTool], name: str,
                           arguments: Mapping[str, Any] | None,
                           env: Mapping[str, str] | None = None) -> CallToolResult:
    """One tool call as an MCP result. A call that needs the process's account when the install has
    none says what is missing and the command that fixes it (``env``: the server's configuration)."""
    try:
        tool, arguments = checked_call(tools, name, arguments)
    except PlughostError as exc:
        return _error(str(exc))
    started = time.perf_counter()
    try:
        if inspect.iscoroutinefunction(tool.handler):
            value = await tool.handler(**arguments)
        else:
            value = await anyio.to_thread.run_sync(lambda: tool.handler(**arguments))
    except AccountUnset as exc:
        if env is None:
            return _error(str(exc))
        from plughost.runtime.install_record import account_fix

        log("mcp", "op=account-unset", plugin=plugin, tool=name)
        return _error(f"{exc}: {account_fix(env)}")
    except PlughostError as exc:
        return _error(str(exc))
    except Exception as exc:
        log("mcp", "op=tool-error", plugin=plugin, tool=name, error=type(exc).__name__,
            ms=round((time.perf_counter() - started) * 1000))
        return _error(f"{name} failed: {type(exc).__name__}: {exc}")
    if isinstance(value, CallToolResult):  # a handler that builds its own content (images, resources ...)
        return value
    return CallToolResult(content=[TextContent(type="text", text=render(value))], is_error=False)


def build_server(host: Host, plugin: str) -> PluginServer:
    """Build the MCP server for one loaded plugin."""
    record = host.plugin(plugin)
    version = record.manifest.version if record.manifest else ""
    tools = served_tools(host, plugin)
    return PluginServer(plugin, tools, version=version, host=host, withheld=host.tools().withheld.get(plugin))


async def run_stdio_checked(server: PluginServer) -> None:
    """``run_stdio_async`` with :mod:`plughost.mcp.frames` in front: a frame the SDK refuses is answered."""
    from mcp.server.stdio import stdio_server

    from plughost.mcp.frames import CheckedLines

    class _Unowned(io.TextIOWrapper):
        def close(self) -> None:  # the buffer is sys.stdin's: never close it
            with contextlib.suppress(ValueError):
                self.detach()

    lines = CheckedLines(anyio.wrap_file(_Unowned(sys.stdin.buffer, encoding="utf-8", errors="replace")))
    lowlevel = server._lowlevel_server
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]

        async def relay() -> None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                async with lines.errors:
                    async for message in lines.errors:
                        await write_stream.send(message)

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            if server.host is not None and threading.current_thread() is threading.main_thread():
                tg.start_soon(_close_on_sigterm, server)
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()


async def _close_on_sigterm(server: PluginServer) -> None:
    """SIGTERM ends a stdio server after ``host.close()``: the shutdown hooks write what is queued
    (the tool-call audit) and the store closes. The process then exits at once (status 0): the
    thread blocked reading stdin would keep an ordinary exit waiting for the client's next line."""
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            log("mcp", "op=stopping", plugin=server.plugin, signal="SIGTERM")
            try:
                await anyio.to_thread.run_sync(server.drain)
                await anyio.to_thread.run_sync(server.host.close)  # type: ignore[union-attr]
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(0)


def serve_stdio(host: Host, plugin: str) -> None:
    server = build_server(host, plugin)
    settle_heap()
    try:
        anyio.run(run_stdio_checked, server)
    finally:
        server.drain()  # the audit of the last calls, before the caller closes the host


def quiet_library_logs(env: Mapping[str, str]) -> None:
    """Keep the libraries' info lines out of a served process's log: the MCP SDK's session chatter
    is not a contract line (``PLUGHOST_DEBUG`` keeps it), and httpx logs every request's URL, which
    for Telegram carries the bot token (never kept)."""
    if not settings.DEBUG.read(env):
        logging.getLogger("mcp").setLevel(logging.WARNING)
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)


def loopback_allowed(port: int | None) -> tuple[list[str], list[str]]:
    """The Host headers and Origins an MCP endpoint on ``port`` answers (DNS-rebinding protection):
    loopback names, on that port; on any port while the port is not known yet (0 before the bind)."""
    names = ["127.0.0.1", "localhost", "[::1]"]
    hosts = [f"{h}:{port}" for h in names] if port else [f"{h}:*" for h in names]
    if port in (None, 0, 80):  # a Host or Origin without a port names port 80
        hosts = names + hosts
    return hosts, [f"http://{h}" for h in hosts]


def allow_only_port(server: PluginServer, port: int) -> None:
    """Narrow a server's mounted endpoint to the port its app was bound to (asked for port 0, its
    checks allowed any loopback port until the bind): a page on another local port is refused."""
    settings = getattr(server.session_manager, "security_settings", None)
    if settings is not None:
        settings.allowed_hosts, settings.allowed_origins = loopback_allowed(port)


def http_app(server: PluginServer, *, path: str = "/mcp", host: str = "127.0.0.1", port: int | None = None,
             stateless: bool = False) -> Any:
    """A Starlette app serving ``server`` over streamable HTTP with DNS-rebinding protection on."""
    from mcp.server.transport_security import TransportSecuritySettings

    allowed_hosts, origins = loopback_allowed(port)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts,
                                         allowed_origins=origins)
    return server.streamable_http_app(streamable_http_path=path, transport_security=security, host=host,
                                      stateless_http=stateless)


def serve_http(host: Host, plugin: str, *, port: int, bind: str = "127.0.0.1") -> None:
    """One plugin over streamable HTTP, behind the same front door as ``plughost serve`` (host.http_guard)."""
    import uvicorn

    from plughost.web.http_guard import Door, GuardMiddleware

    opened = settings.OPEN_LOCAL.read(host.env)
    if opened and not (bind == "localhost" or is_loopback(bind)):
        raise UserError(f"--bind {bind}: refusing a non-loopback bind while PLUGHOST_OPEN_LOCAL=1 opens /mcp")
    server = build_server(host, plugin)
    app = http_app(server, host=bind, port=port)
    quiet_library_logs(host.env)
    settle_heap()
    door = Door(home=host.home, account_id=host.principal.account, open_local=opened, principal=host.principal)
    door.http_token  # noqa: B018  (created now: the client reads it from the file)
    app.add_middleware(GuardMiddleware, door=door)
    shown = f"[{bind}]" if ":" in bind else bind

    class Announced(uvicorn.Server):
        """Says where it listens once bound: asked for port 0, the port is known only then."""

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.servers and self.servers[0].sockets:
                bound = self.servers[0].sockets[0].getsockname()[1]
                allow_only_port(server, bound)
                log("mcp", "op=serve-http", plugin=plugin, url=f"http://{shown}:{bound}/mcp",
                    access="open-local" if opened else "bearer-token")  # a field named auth= would be redacted

    try:
        Announced(uvicorn.Config(app, host=bind, port=port, log_level="warning")).run()
    finally:
        server.drain()


def run_plugin_server(plugin: str) -> None:
    """Entry for a plugin's ``mcp/__main__.py``: load the host from the configuration (the environment
    over ``<PLUGHOST_HOME>/.env``, as every command does), serve stdio."""
    from plughost.runtime.host import Host
    try:
        host = Host(env=config.load_env()).load()
        from plughost.runtime.settings import warn_unknown

        warn_unknown(host)
        try:
            serve_stdio(host, plugin)
        finally:
            host.close()  # the shutdown hooks: the tool-call audit's queue is written
    except PlughostError as exc:
        print(f"plughost mcp: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
